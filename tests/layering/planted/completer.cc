// SPDX-License-Identifier: MIT
// Not compiled: a planted completer that changes the requester's part of a QP context in the ways
// check_block_state.cmake must catch, for the tests that it fails on each.
void Completer::Retire(QpContext& qp) { qp.requester.next_exec = qp.completer.head; }
void Completer::Stage(QpContext& qp) { qp.requester.staged[0].ready = true; }
void Completer::Hold(QpContext& qp) { auto& r = qp.requester; }
void Completer::Pass(QpContext& qp) { Bump(&qp.requester.outstanding_reads); }
void Completer::Read(const QpContext& qp) { const auto& r = qp.requester; }  // allowed: reads only
