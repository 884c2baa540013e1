/* SPDX-License-Identifier: MIT */
/* The C scenarios of consumer_services.c, for the C++ test that runs them. Plain C types only, so
 * the C++ side does not include the WDK headers. */
#ifndef NDKSIM_TESTS_KERNEL_CONSUMER_SERVICES_H_
#define NDKSIM_TESTS_KERNEL_CONSUMER_SERVICES_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct KernelTestResults {
    uint32_t if_index;
    uint32_t ndk_dispatch_bytes;
    int32_t loopback_open_status;
    int32_t unknown_open_status;
    uint32_t max_receive_sge;
    uint8_t dpc_irql;
    uint8_t work_irql;
    uint8_t timer_signaled;
    uint8_t mdl_system_address_matches;
    uint8_t zeroed;
    uint8_t acquire_after_rundown;
    uint64_t start_time;
    uint64_t dpc_time;
    uint64_t wake_time;
    int32_t thread_counter;
    uint32_t mdl_byte_count;
    uint32_t mdl_byte_offset;
    uint32_t registry_path_chars;
    int order[3];
    /* The callback driver (CallbackDriverEntry and its variants): the address whose adapter it
     * opens (set by the test), what its PD create returned, the IRQL of the create's callback, and
     * what the work item that callback queued got from WskOpenNdkAdapter. */
    uint32_t callback_driver_ipv4;
    uint8_t callback_from_timer; /* set by the test: a timer's DPC queues the work item instead */
    uint8_t assert_in_callback;  /* set by the test: the create's callback fails an NT_ASSERT */
    uint8_t crash_in_callback;   /* set by the test: the create's callback writes through NULL */
    /* ScenarioTwoRnicsOnOneMachine: the machine's interfaces, the second RNIC's index (the first's
     * is if_index), both adapter opens, and the second RNIC's alias and name conversions. */
    uint32_t interface_count;
    uint32_t second_if_index;
    int32_t first_open_status;
    int32_t second_open_status;
    uint8_t adapters_differ;
    int32_t alias_status;
    char alias[32];
    uint8_t alias_round_trip;
    int32_t name_status;
    char name[32];
    uint8_t name_round_trip;
    int32_t short_buffer_status;
    int32_t create_status;
    uint8_t callback_irql;
    int32_t work_open_status;
} KernelTestResults;

extern KernelTestResults g_results;

struct _DRIVER_OBJECT;
struct _UNICODE_STRING;

int32_t ScenarioOpenAdapterThroughWsk(uint32_t ipv4_network_order);
int32_t ScenarioTwoRnicsOnOneMachine(uint32_t first_ipv4, uint32_t second_ipv4);
void ScenarioTimerDpc(void);
int32_t ScenarioWaitTimesOut(void);
int32_t ScenarioWorkItemFromDpc(struct _DRIVER_OBJECT *driver);
int32_t ScenarioSystemThreadIsWaitable(void);
int32_t ScenarioMdlOfPool(void);
int ScenarioListsKeepOrder(void);
int32_t ScenarioRundownWaitsForRelease(void);
void ScenarioThreeSystemThreads(void);
/* `threads` system threads each add one to g_results.thread_counter, racily (see the C file). */
void ScenarioRacyIncrements(int threads);
void ViolationWaitAtDispatch(void);
void ViolationSpinLockReleasedTwice(void);
void ViolationSpinLockReleasedTwiceAtPassive(void);
void ViolationPagedCodeAtDispatch(void);
void ViolationSetEventAfterFree(void);
void ViolationFreeWithWrongTag(void);
void ViolationOverrunPool(void);
void ViolationUnderrunPool(void);
void ViolationWriteAfterFree(void);
void ViolationFreeEventWithWaiter(void);
void ViolationReinitializeEventWithWaiter(void);
void ViolationLockOrderInversion(void);
void ScenarioLockOrderKeptOrRenewed(void);
int32_t ScenarioTryExceptFinally(void);
void ViolationProbeMisaligned(void);
void CrashWriteThroughNull(void);
void CrashStackOverflow(void);
int32_t LeakyDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
int32_t CleanDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
int32_t HeartbeatDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* Queues an IO_WORKITEM from the callback; frees the callback's pool at unload. */
int32_t CallbackDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* Queues an ExQueueWorkItem work item from the callback instead. */
int32_t CallbackExWorkItemDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* As CallbackDriverEntry, but its unload forgets the pool its callback allocated. */
int32_t CallbackLeakyDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* The address of the __declspec(selectany) global consumer_wdk_surface.c defines too. */
const void *ServicesSelectAnyAddress(void);

#ifdef __cplusplus
}
#endif

#endif
