// SPDX-License-Identifier: MIT
// The driver's handle on the NIC: each command is the NIC's, called through here.
#include "hwmodel/device.h"

#include "nic.h"

namespace ndksim::hw {

void DoorbellInbox::WriteOverflow(const Doorbell& doorbell) {
  const std::lock_guard lock(overflow_mutex_);
  overflow_.push_back(doorbell);
  // release: pairs with the acquire load in Write.
  overflow_active_.store(true, std::memory_order_release);
}

void DoorbellInbox::TakeOverflow(std::vector<Doorbell>& out) {
  out.clear();
  const std::lock_guard lock(overflow_mutex_);
  out.swap(overflow_);
  // release: pairs with the acquire load in Write; writers go back to the FIFO, after the list.
  overflow_active_.store(false, std::memory_order_release);
}

NodeId Device::Id() const { return nic_.Id(); }
const HardwareProfile& Device::Profile() const { return nic_.Profile(); }
const IdLayout& Device::QpIds() const { return nic_.QpIds(); }
const IdLayout& Device::CqIds() const { return nic_.CqIds(); }
const IdLayout& Device::SrqIds() const { return nic_.SrqIds(); }
const std::vector<NetworkAddress>& Device::Addresses() const { return nic_.Addresses(); }
bool Device::OwnsAddress(const NetworkAddress& a) const { return nic_.OwnsAddress(a); }

void Device::SetEventQueue(SpscRing<EventEntry>* ring, std::uint32_t interrupt_vector) {
  nic_.SetEventQueue(ring, interrupt_vector);
}
void Device::SetDatagramQueue(SpscRing<ManagementDatagram>* ring) { nic_.SetDatagramQueue(ring); }
void Device::EventQueueConsumed() { nic_.EventQueueConsumed(); }
CommandStatus Device::CreateCq(const CqCreate& create, CqNumber* out) { return nic_.CreateCq(create, out); }
CommandStatus Device::ResizeCq(CqNumber cq, const CompletionQueueMemory& memory, std::uint32_t queued) {
  return nic_.ResizeCq(cq, memory, queued);
}
CommandStatus Device::ModerateCq(CqNumber cq, const CqModeration& moderation) {
  return nic_.ModerateCq(cq, moderation);
}
CommandStatus Device::DestroyCq(CqNumber cq) { return nic_.DestroyCq(cq); }
CommandStatus Device::AllocatePd(PdNumber* out) { return nic_.AllocatePd(out); }
CommandStatus Device::FreePd(PdNumber pd) { return nic_.FreePd(pd); }
CommandStatus Device::CreateQp(const QpCreate& create, Qpn* out) { return nic_.CreateQp(create, out); }
CommandStatus Device::ConnectQp(Qpn qpn, const QpConnect& connect) { return nic_.ConnectQp(qpn, connect); }
CommandStatus Device::ModifyQpToError(Qpn qpn) { return nic_.ModifyQpToError(qpn); }
CommandStatus Device::DestroyQp(Qpn qpn) { return nic_.DestroyQp(qpn); }
CommandStatus Device::CreateSrq(const SrqCreate& create, SrqNumber* out) { return nic_.CreateSrq(create, out); }
CommandStatus Device::ArmSrqLimit(SrqNumber srq, std::uint32_t limit) { return nic_.ArmSrqLimit(srq, limit); }
CommandStatus Device::ReplaceSrqQueue(SrqNumber srq, const WorkQueue& queue) {
  return nic_.ReplaceSrqQueue(srq, queue);
}
CommandStatus Device::DestroySrq(SrqNumber srq) { return nic_.DestroySrq(srq); }
QpState Device::QueryQpState(Qpn qpn) const { return nic_.QueryQpState(qpn); }
CommandStatus Device::RegisterMemory(const MemoryRegistration& reg, MemoryKey* out, std::uint32_t* generation) {
  return nic_.RegisterMemory(reg, out, generation);
}
CommandStatus Device::DeregisterMemory(MemoryKey key) { return nic_.DeregisterMemory(key); }
CommandStatus Device::AllocateFastRegisterKey(PdNumber pd, std::uint32_t page_capacity, bool remote_access,
                                              MemoryKey* out, std::uint32_t* generation) {
  return nic_.AllocateFastRegisterKey(pd, page_capacity, remote_access, out, generation);
}
CommandStatus Device::AllocateWindowKey(PdNumber pd, MemoryKey* out, std::uint32_t* generation) {
  return nic_.AllocateWindowKey(pd, out, generation);
}
CommandStatus Device::AllocatePrivilegedKey(PdNumber pd, MemoryKey* out) { return nic_.AllocatePrivilegedKey(pd, out); }
CommandStatus Device::FreeMemoryKey(MemoryKey key) { return nic_.FreeMemoryKey(key); }
bool Device::SendManagementDatagram(const NetworkAddress& destination, std::span<const std::byte> bytes) {
  return nic_.SendManagementDatagram(destination, bytes);
}

}  // namespace ndksim::hw
