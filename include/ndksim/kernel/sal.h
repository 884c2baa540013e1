/* SPDX-License-Identifier: MIT */
/* sal.h - the source annotations Windows kernel code is written with (_In_, _IRQL_requires_max_,
 * ...). They guide Microsoft's static analysers and change nothing in the compiled code, so here
 * every one expands to nothing. Only the annotations NDK consumers and the WDK headers they include
 * commonly use are listed; an unlisted one is a compile error naming it, to be added here. */
#ifndef NDKSIM_KERNEL_SAL_H_
#define NDKSIM_KERNEL_SAL_H_

#define _In_
#define _In_opt_
#define _In_z_
#define _In_opt_z_
#define _In_reads_(n)
#define _In_reads_opt_(n)
#define _In_reads_bytes_(n)
#define _In_reads_bytes_opt_(n)
#define _In_range_(a, b)
#define _Out_
#define _Out_opt_
#define _Out_writes_(n)
#define _Out_writes_opt_(n)
#define _Out_writes_bytes_(n)
#define _Out_writes_bytes_opt_(n)
#define _Out_writes_to_(n, m)
#define _Out_writes_bytes_to_(n, m)
#define _Out_writes_bytes_to_opt_(n, m)
#define _Inout_
#define _Inout_opt_
#define _Inout_updates_(n)
#define _Inout_updates_opt_(n)
#define _Inout_updates_bytes_(n)
#define _Inout_updates_bytes_to_(n, m)
#define _Inout_bytecount_(n)
#define _Outptr_
#define _Outptr_opt_
#define _Outptr_result_maybenull_
#define _Outptr_opt_result_maybenull_
#define _Outptr_result_nullonfailure_
#define _Outptr_result_buffer_(n)
#define _Outptr_result_buffer_maybenull_(n)
#define _Outptr_opt_result_buffer_maybenull_(n)
#define _Outptr_result_bytebuffer_(n)
#define _Outref_result_nullonfailure_
#define _Deref_out_
#define _Deref_out_range_(a, b)
#define _Must_inspect_result_
#define _Check_return_
#define _Success_(expr)
#define _Ret_maybenull_
#define _Ret_notnull_
#define _Ret_range_(a, b)
#define _Post_invalid_
#define _Post_ptr_invalid_
#define _Post_satisfies_(expr)
#define _Post_notnull_
#define _Post_maybenull_
#define _Post_writable_byte_size_(n)
#define _Pre_notnull_
#define _Pre_satisfies_(expr)
/* The primitives _Pre_ and _Post_ prefix another annotation (_Pre_ _Notnull_); _Curr_ and _Const_
 * name the annotated object inside _At_ and _When_; _Inexpressible_ stands for a size SAL cannot
 * state. */
#define _Pre_
#define _Post_
#define _Curr_
#define _Const_
#define _Inexpressible_(expr)
#define _Null_
#define _Notnull_
#define _Maybenull_
#define _Null_terminated_
#define _Field_size_(n)
#define _Field_size_opt_(n)
#define _Field_size_bytes_(n)
#define _Field_size_bytes_opt_(n)
#define _Field_size_bytes_part_(n, m)
#define _Field_range_(a, b)
#define _Frees_ptr_
#define _Frees_ptr_opt_
#define _When_(cond, annotes)
#define _At_(target, annotes)
#define _Use_decl_annotations_
#define _Function_class_(name)
#define _Dispatch_type_(type)
#define _Printf_format_string_
#define _Reserved_
#define _Interlocked_operand_
#define _Analysis_assume_(expr)
#define _Analysis_assume_lock_held_(lock)
#define _Analysis_assume_lock_not_held_(lock)
#define _Kernel_float_used_
#define _Kernel_requires_resource_held_(kind)
#define _Kernel_clear_do_init_(yesNo)
#define _Kernel_IoGetDmaAdapter_
#define _Acquires_lock_(lock)
#define _Acquires_exclusive_lock_(lock)
#define _Acquires_shared_lock_(lock)
#define _Releases_lock_(lock)
#define _Releases_exclusive_lock_(lock)
#define _Releases_shared_lock_(lock)
#define _Requires_lock_held_(lock)
#define _Requires_lock_not_held_(lock)
#define _Requires_exclusive_lock_held_(lock)
#define _Requires_shared_lock_held_(lock)
#define _Guarded_by_(lock)
#define _Write_guarded_by_(lock)
#define _Interlocked_
/* Statement-level: the analyser ignores races between the two markers (code that runs before
 * other threads can see the data, or after they are gone). Nothing to do at run time. */
#define _No_competing_thread_begin_
#define _No_competing_thread_end_
#define _Benign_race_begin_
#define _Benign_race_end_
#define _IRQL_requires_(irql)
#define _IRQL_requires_max_(irql)
#define _IRQL_requires_min_(irql)
#define _IRQL_requires_same_
#define _IRQL_raises_(irql)
#define _IRQL_saves_
#define _IRQL_restores_
#define _IRQL_saves_global_(kind, param)
#define _IRQL_restores_global_(kind, param)
#define _IRQL_always_function_max_(irql)
#define _IRQL_always_function_min_(irql)
#define _IRQL_uses_cancel_
#define _IRQL_is_cancel_
#define _Kernel_requires_resource_not_held_(kind)
#define _Strict_type_match_
#define _Literal_
#define _Points_to_data_
#define _Readable_bytes_(n)
#define _Writable_bytes_(n)
#define _Readable_elements_(n)
#define _Writable_elements_(n)

/* The older (__in) spellings; C only, since C++ standard libraries use these names themselves. */
#ifndef __cplusplus
#define __in
#define __in_opt
#define __out
#define __out_opt
#define __inout
#define __inout_opt
#define __in_bcount(n)
#define __out_bcount(n)
#define __in_ecount(n)
#define __out_ecount(n)
#define __notnull
#define __deref_out
#define __deref_out_opt
#define __checkReturn
#define __drv_maxIRQL(irql)
#define __drv_minIRQL(irql)
#define __drv_requiresIRQL(irql)
#define __drv_raisesIRQL(irql)
#define __drv_savesIRQL
#define __drv_restoresIRQL
#define __drv_savesIRQLGlobal(kind, param)
#define __drv_restoresIRQLGlobal(kind, param)
#define __drv_setsIRQL(irql)
#define __drv_aliasesMem
#define __drv_allocatesMem(kind)
#define __drv_freesMem(kind)
#define __drv_when(cond, annotes)
#define __drv_dispatchType(type)
#define __drv_functionClass(name)
#define __drv_sameIRQL
#define __drv_acquiresResource(kind)
#define __drv_releasesResource(kind)
#define __drv_acquiresExclusiveResource(kind)
#define __drv_releasesExclusiveResource(kind)
#define __drv_mustHold(kind)
#define __drv_neverHold(kind)
#define __drv_strictTypeMatch(mode)
#define __drv_strictType(type, mode)
#define __drv_inTry
#define __drv_notInTry
#define __drv_reportError(why)
#define __drv_declspec(x)
#define __drv_nop(annotation)
#endif /* __cplusplus */

/* The pre-SAL 2 assumption statement, also in C++ (no standard library uses the name). */
#define __analysis_assume(expr) ((void)0)

#endif /* NDKSIM_KERNEL_SAL_H_ */
