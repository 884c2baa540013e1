// SPDX-License-Identifier: MIT
// Not compiled: a planted completer that moves the requester's cursor itself, for the test that
// check_block_state.cmake fails on it.
void Completer::Retire(QpContext& qp) { qp.requester.next_exec = qp.completer.head; }
