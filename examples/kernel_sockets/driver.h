/* SPDX-License-Identifier: MIT */
/* driver.h - the NDK sockets driver's own types and routines.
 *
 * A socket is an NDK connection with resources of its own: the NDK adapter of the interface its
 * local address is on (every socket opens one), a PD, one CQ, one QP, and two rings of message
 * buffers, the receive ring reached through the PD's privileged token and the send ring through a
 * fast-registered MR. A byte stream runs over the connection in messages of at most one receive
 * buffer. A side sends data only while it holds a credit, a receive of the peer's that no message
 * is on its way to; each header hands credits back, one per receive its sender has emptied and
 * posted again. So no send meets a receiver-not-ready NAK, and a program that stops reading stops
 * its peer's sends. A side with credits to return and no data to carry them sends a credit
 * message, into one more receive the peer keeps posted for that alone: credits then flow back
 * even while the peer's program leaves every data receive full.
 *
 * Everything the driver keeps lives in its device extension, none in globals: the tests load the
 * same driver on two machines of one process. */
#pragma once

/* Pool tags, written backwards so that the pool shows them forwards. */
#define NKS_TAG_SOCKET 'kcoS'  /* Sock: sockets */
#define NKS_TAG_BUFFER 'fbkS'  /* Skbf: message rings */
#define NKS_TAG_LAM 'mlkS'     /* Sklm: logical address mappings */
#define NKS_TAG_ADAPTER 'dakS' /* Skad: adapters */
#define NKS_TAG_ACCEPT 'cakS'  /* Skac: accept work */

#define NKS_DEVICE_NAME L"\\Device\\NdkSock"
#define NKS_DOS_DEVICE_NAME L"\\DosDevices\\NdkSock"

/* NDK 2.1 for NdkAcceptEx and NdkCompleteConnectEx, whose disconnect events give a reason. */
#define NKS_NDK_MAJOR 2
#define NKS_NDK_MINOR 1

#define NKS_RECEIVE_DEPTH 8    /* receives for data: the credits a side grants */
#define NKS_CONTROL_RECEIVES 1 /* receives for credit messages, beyond those */
#define NKS_RECEIVE_SLOTS (NKS_RECEIVE_DEPTH + NKS_CONTROL_RECEIVES)
#define NKS_SEND_DEPTH 8
#define NKS_SLOT_SIZE 1024u /* one message, header included: four to a page, none across pages */
/* A side returns the credits it owes in a credit message once it owes this many and has no data
 * to carry them. At most NKS_RECEIVE_DEPTH: a peer that has spent every credit is owed them all
 * once its messages have been read. */
#define NKS_GRANT_THRESHOLD (NKS_RECEIVE_DEPTH / 2)
/* Receives, sends, and the fast register of the send ring. */
#define NKS_CQ_DEPTH (NKS_RECEIVE_SLOTS + NKS_SEND_DEPTH + 1)
#define NKS_POLL_BATCH 8

/* ---- the wire ---------------------------------------------------------------------------- */

#define NKS_MESSAGE_MAGIC 0x4B4E
#define NKS_MESSAGE_DATA 1
#define NKS_MESSAGE_CREDIT 2 /* credits only, into the peer's control receive */

typedef struct _NKS_MESSAGE_HEADER {
    USHORT Magic;
    USHORT Type;
    USHORT Credits;     /* data receives posted again since the last grant */
    USHORT CreditEcho;  /* credit messages taken, their receives posted again (modulo 2^16): a
                           side sends another credit message only once the last is echoed */
    ULONG Length;   /* payload bytes after the header */
    ULONG Sequence; /* each direction counts its messages from 0 */
} NKS_MESSAGE_HEADER;
C_ASSERT(sizeof(NKS_MESSAGE_HEADER) == 16);

#define NKS_MAX_PAYLOAD ((ULONG)(NKS_SLOT_SIZE - sizeof(NKS_MESSAGE_HEADER)))

/* The private data of the connect request and of its accept: each side's initial credits. */
#define NKS_HELLO_MAGIC 0x4B53444EUL
#define NKS_HELLO_VERSION 1
typedef struct _NKS_HELLO {
    ULONG Magic;
    USHORT Version;
    USHORT ReceiveDepth; /* receives posted before the connection exists: the first credits */
    ULONG SlotSize;      /* the largest message taken */
} NKS_HELLO;

/* ---- completion of NDK calls that may pend ------------------------------------------------- */

/* An NDK call that returns STATUS_PENDING calls its completion once, later; any other return
 * means no callback. The callback may run before the call returns, which the event absorbs. */
typedef struct _NKS_CALL {
    KEVENT Done;
    NTSTATUS Status;
    NDK_OBJECT_HEADER *Object;
} NKS_CALL, *PNKS_CALL;

/* ---- buffers the adapter reaches --------------------------------------------------------- */

typedef struct _NKS_BUFFER {
    PUCHAR Va;
    SIZE_T Bytes;
    PMDL Mdl;
    NDK_LOGICAL_ADDRESS_MAPPING *Lam;
    ULONG Fbo;
} NKS_BUFFER, *PNKS_BUFFER;

/* ---- adapters ------------------------------------------------------------------------------- */

struct _NKS_DEVICE;
struct _NKS_SOCKET;

/* An open NDK adapter, referenced by the sockets whose objects live on it. A listener's adapter
 * also holds the incoming connectors of the connections the listener accepted, so it stays open
 * until the last of those has closed its connector, after the listening socket itself is gone. */
typedef struct _NKS_ADAPTER {
    volatile LONG References;
    struct _NKS_DEVICE *Device;
    NDK_ADAPTER *Ndk;
    NDK_ADAPTER_INFO Info;
    NET_IFINDEX IfIndex;
    /* A listener's. Connect events go to ListenerSocket while it is set. */
    KSPIN_LOCK Lock;
    _Guarded_by_(Lock) struct _NKS_SOCKET *ListenerSocket;
    NDK_LISTENER *Listener;
    BOOLEAN ListenerClosing;
    KEVENT ListenerClosed; /* the listener's close has completed */
} NKS_ADAPTER, *PNKS_ADAPTER;

/* ---- sockets -------------------------------------------------------------------------------- */

typedef enum _NKS_SOCKET_KIND { NksListenerSocket = 1, NksConnectionSocket = 2 } NKS_SOCKET_KIND;

typedef struct _NKS_RECEIVE_SLOT {
    LIST_ENTRY Link; /* on ReadySlots while it holds bytes the program has not received */
    PUCHAR Va;
    ULONG Offset;    /* the next byte to hand out */
    ULONG End;       /* the end of the message */
    BOOLEAN Posted;
} NKS_RECEIVE_SLOT, *PNKS_RECEIVE_SLOT;

typedef struct _NKS_SEND_SLOT {
    SINGLE_LIST_ENTRY Link; /* on FreeSendSlots while idle */
    PUCHAR Va;
    PIRP Irp;               /* the SEND whose bytes this message carries, if any */
    BOOLEAN InUse;
} NKS_SEND_SLOT, *PNKS_SEND_SLOT;

typedef struct _NKS_ACCEPTED {
    NDKSOCK_SOCKET Socket;
    SOCKADDR_IN Peer;
} NKS_ACCEPTED;

typedef struct _NKS_SOCKET {
    LIST_ENTRY TableLink; /* on the device's table while a program can name it */
    NDKSOCK_SOCKET Id;
    NKS_SOCKET_KIND Kind;
    PFILE_OBJECT Owner;   /* the open that made it: its cleanup closes it */
    struct _NKS_DEVICE *Device;
    /* Held by each request that found the socket in the table and by each IRP it keeps. */
    EX_RUNDOWN_REF Rundown;
    KSPIN_LOCK Lock;      /* everything below that changes after creation */
    SOCKADDR_IN Local;
    SOCKADDR_IN Peer;
    PNKS_ADAPTER Adapter; /* its own */
    BOOLEAN Closing;

    /* A listener. */
    ULONG Backlog;
    ULONG AcceptsInProgress;
    ULONG AcceptedCount;
    NKS_ACCEPTED Accepted[NDKSOCK_MAX_BACKLOG]; /* oldest first */
    LIST_ENTRY AcceptIrps;

    /* A connection. */
    PNKS_ADAPTER ConnectorAdapter; /* the adapter its connector lives on, referenced */
    NDK_PD *Pd;
    NDK_CQ *Cq;
    NDK_QP *Qp;
    NDK_CONNECTOR *Connector;
    NDK_MR *SendMr;
    UINT32 PrivilegedToken;
    UINT32 SendToken;
    NKS_BUFFER ReceiveRing;
    NKS_BUFFER SendRing;
    NKS_RECEIVE_SLOT ReceiveSlots[NKS_RECEIVE_SLOTS];
    NKS_SEND_SLOT SendSlots[NKS_SEND_DEPTH];
    SINGLE_LIST_ENTRY FreeSendSlots;
    LIST_ENTRY ReadySlots;  /* received messages with bytes left, in arrival order */
    LIST_ENTRY ReceiveIrps; /* RECEIVEs waiting for bytes */
    LIST_ENTRY SendIrps;    /* SENDs none of whose bytes is posted yet */
    LIST_ENTRY ActiveSends; /* SENDs with messages posted, in order; the last may have more to post */
    ULONG SendCredits;      /* data receives the peer has posted that we may consume */
    ULONG PendingCredits;   /* data receives we posted again and have not granted yet */
    USHORT PeerCreditEcho;  /* of our credit messages, those the peer has taken */
    ULONG PeerReceiveDepth;
    ULONG PostedReceives;
    ULONG PostedSends;      /* sends and the fast register not yet completed */
    ULONG NextSendSequence;
    ULONG NextReceiveSequence;
    ULONG BufferedBytes;
    BOOLEAN Connected;
    BOOLEAN PeerDisconnected;
    BOOLEAN Flushed;
    BOOLEAN CqDead;         /* overrun or adapter failure: nothing posted will complete */
    BOOLEAN Stalled;        /* data waits for credits */
    NTSTATUS Error;         /* what ended the connection; success while it has not failed */
    ULONG DisconnectReason;
    KEVENT Drained;         /* closing, and nothing posted is left to complete */
    ULONG64 BytesSent;
    ULONG64 BytesReceived;
    ULONG64 MessagesSent;
    ULONG64 MessagesReceived;
    ULONG64 CreditMessagesSent;
    ULONG64 CreditMessagesReceived; /* and their receives posted again: what we echo */
    ULONG64 CreditStalls;
} NKS_SOCKET, *PNKS_SOCKET;

/* ---- the device ----------------------------------------------------------------------------- */

typedef struct _NKS_STATS {
    volatile LONG SocketsOpen;
    volatile LONG AdaptersOpen;
    volatile LONG64 SocketsCreated;
    volatile LONG64 AdaptersOpened;
    volatile LONG64 ConnectionsAccepted;
    volatile LONG64 ConnectionsRejected;
    volatile LONG64 ConnectionsFailed;
    volatile LONG64 BytesSent;
    volatile LONG64 BytesReceived;
    volatile LONG64 RequestsCancelled;
} NKS_STATS;

/* The control device's extension: the whole state of one loaded instance of the driver. */
typedef struct _NKS_DEVICE {
    PDEVICE_OBJECT Self;
    WSK_REGISTRATION WskRegistration;
    BOOLEAN WskRegistered;
    KGUARDED_MUTEX WskLock; /* the provider NPI is captured at the first socket */
    BOOLEAN WskCaptured;
    WSK_PROVIDER_NPI WskProvider;
    WSK_PROVIDER_NDK_DISPATCH NdkDispatch;
    KSPIN_LOCK TableLock;
    _Guarded_by_(TableLock) LIST_ENTRY Sockets;
    _Guarded_by_(TableLock) NDKSOCK_SOCKET NextSocket;
    NKS_STATS Stats;
} NKS_DEVICE, *PNKS_DEVICE;

/* ---- ndk.c: WSK, adapters, pending calls, buffers, addresses ------------------------------- */

_IRQL_requires_(PASSIVE_LEVEL) NTSTATUS NksWskRegister(_Inout_ PNKS_DEVICE Device);
_IRQL_requires_(PASSIVE_LEVEL) VOID NksWskDeregister(_Inout_ PNKS_DEVICE Device);
/* Opens the NDK adapter of the interface that owns Address. */
_IRQL_requires_(PASSIVE_LEVEL) _Must_inspect_result_ NTSTATUS NksAdapterOpen(_Inout_ PNKS_DEVICE Device,
                                                                              _In_ const IN_ADDR *Address,
                                                                              _Outptr_ PNKS_ADAPTER *Adapter);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksAdapterReference(_Inout_ PNKS_ADAPTER Adapter);
/* The last reference closes the adapter, once its listener's close has completed. */
_IRQL_requires_(PASSIVE_LEVEL) VOID NksAdapterRelease(_In_ PNKS_ADAPTER Adapter);

_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksCallInit(_Out_ PNKS_CALL Call);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksCallRequestDone(_In_ PVOID Context, _In_ NTSTATUS Status);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksCallCreateDone(_In_ PVOID Context, _In_ NTSTATUS Status,
                                                           _In_ NDK_OBJECT_HEADER *Object);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksCallCloseDone(_In_ PVOID Context);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksCloseIgnored(_In_opt_ PVOID Context);
/* The call's final status: Returned, or, after STATUS_PENDING, the callback's. */
_IRQL_requires_max_(APC_LEVEL) NTSTATUS NksCallFinish(_Inout_ PNKS_CALL Call, _In_ NTSTATUS Returned);
/* The same for a create; a pending create hands its object to the callback only. */
_IRQL_requires_max_(APC_LEVEL) NTSTATUS NksCallFinishCreate(_Inout_ PNKS_CALL Call, _In_ NTSTATUS Returned,
                                                             _Inout_ PVOID *Object);

_IRQL_requires_(PASSIVE_LEVEL) _Must_inspect_result_ NTSTATUS NksBufferCreate(_In_ PNKS_ADAPTER Adapter,
                                                                               _Out_ PNKS_BUFFER Buffer,
                                                                               _In_ SIZE_T Bytes);
_IRQL_requires_(PASSIVE_LEVEL) VOID NksBufferDelete(_In_ PNKS_ADAPTER Adapter, _Inout_ PNKS_BUFFER Buffer);
/* The adapter's logical address of a byte of the buffer. */
_IRQL_requires_max_(DISPATCH_LEVEL) ULONGLONG NksBufferLogical(_In_ const NKS_BUFFER *Buffer, _In_ SIZE_T Offset);

/* L"a.b.c.d" or L"a.b.c.d:port" from a program's fixed-size field. */
_IRQL_requires_max_(APC_LEVEL) _Must_inspect_result_ NTSTATUS
NksParseAddress(_In_reads_(NDKSOCK_ADDRESS_CHARS) const uint16_t *Text, _In_ BOOLEAN PortRequired,
                _Out_ SOCKADDR_IN *Address);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksFormatAddress(_In_ const SOCKADDR_IN *Address,
                                                          _Out_writes_(NDKSOCK_ADDRESS_CHARS) char *Text);

/* ---- socket.c: sockets, connections and their data path ----------------------------------- */

_IRQL_requires_(PASSIVE_LEVEL) _Must_inspect_result_ NTSTATUS NksSocketCreate(_Inout_ PNKS_DEVICE Device,
                                                                               _In_ PFILE_OBJECT Owner,
                                                                               _In_ NKS_SOCKET_KIND Kind,
                                                                               _In_ const SOCKADDR_IN *Local,
                                                                               _Outptr_ PNKS_SOCKET *Socket);
/* Gives the socket its handle and makes it reachable by programs. */
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksSocketInsert(_Inout_ PNKS_DEVICE Device, _Inout_ PNKS_SOCKET Socket);
/* Tears down a socket no program can reach any more (never inserted, or taken out of the table)
 * and frees it. */
_IRQL_requires_(PASSIVE_LEVEL) VOID NksSocketDestroy(_In_ PNKS_SOCKET Socket);
/* The socket with this handle, of this open (any open when Owner is NULL), with a reference the
 * caller drops with NksSocketDereference or hands to an IRP it pends. */
_IRQL_requires_max_(DISPATCH_LEVEL) PNKS_SOCKET NksSocketReference(_In_ PNKS_DEVICE Device, _In_ NDKSOCK_SOCKET Id,
                                                                   _In_opt_ PFILE_OBJECT Owner);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksSocketDereference(_In_ PNKS_SOCKET Socket);
_IRQL_requires_(PASSIVE_LEVEL) NTSTATUS NksSocketClose(_Inout_ PNKS_DEVICE Device, _In_ NDKSOCK_SOCKET Id,
                                                        _In_opt_ PFILE_OBJECT Owner);
/* Every socket of the open, or every socket at all. */
_IRQL_requires_(PASSIVE_LEVEL) VOID NksSocketCloseAll(_Inout_ PNKS_DEVICE Device, _In_opt_ PFILE_OBJECT Owner);
_IRQL_requires_max_(APC_LEVEL) VOID NksSocketQuery(_In_ PNKS_SOCKET Socket, _Out_ NDKSOCK_SOCKET_INFO *Info);

/* A connection's PD, rings, CQ, QP and send MR, with its receives posted. */
_IRQL_requires_(PASSIVE_LEVEL) _Must_inspect_result_ NTSTATUS NksConnectionPrepare(_Inout_ PNKS_SOCKET Socket);
/* The peer's hello: its initial credits. Before the peer can send anything. */
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksConnectionCredit(_Inout_ PNKS_SOCKET Socket, _In_ const NKS_HELLO *Peer);
/* Connected: registers the send ring and starts sending. */
_IRQL_requires_(PASSIVE_LEVEL) _Must_inspect_result_ NTSTATUS NksConnectionStart(_Inout_ PNKS_SOCKET Socket);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksHelloInit(_Out_ NKS_HELLO *Hello);
_IRQL_requires_max_(DISPATCH_LEVEL) BOOLEAN NksHelloValid(_In_reads_bytes_(Length) const NKS_HELLO *Hello,
                                                          _In_ ULONG Length);
/* NDK_FN_DISCONNECT_EVENT_CALLBACK_EX */
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksDisconnectEvent(_In_ PVOID Context, _In_ ULONG Reason);

_IRQL_requires_(PASSIVE_LEVEL) NTSTATUS NksConnect(_Inout_ PNKS_DEVICE Device, _In_ PFILE_OBJECT Owner,
                                                    _In_ const NDKSOCK_CONNECT_IN *Input,
                                                    _Out_ NDKSOCK_SOCKET_OUT *Output);
/* Each returns the request's status, or STATUS_PENDING once the socket holds the IRP (and the
 * caller's reference with it). Irp->IoStatus.Information is set for a completion. */
_IRQL_requires_max_(APC_LEVEL) NTSTATUS NksSend(_In_ PNKS_SOCKET Socket, _Inout_ PIRP Irp);
_IRQL_requires_max_(APC_LEVEL) NTSTATUS NksReceive(_In_ PNKS_SOCKET Socket, _Inout_ PIRP Irp);

/* IRPs a socket keeps: queued with a cancel routine, completed with the socket's reference. */
_Requires_lock_held_(Socket->Lock) NTSTATUS NksQueueIrpLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PLIST_ENTRY Queue,
                                                              _Inout_ PIRP Irp);
_Requires_lock_held_(Socket->Lock) PIRP NksDequeueIrpLocked(_Inout_ PLIST_ENTRY Queue);
/* Sets the IRP's status and puts it on Done, to be completed once no lock is held. */
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksDeferCompletion(_Inout_ PLIST_ENTRY Done, _Inout_ PIRP Irp,
                                                            _In_ NTSTATUS Status, _In_ ULONG_PTR Information);
_IRQL_requires_max_(DISPATCH_LEVEL) VOID NksCompleteIrps(_Inout_ PLIST_ENTRY Done);

/* ---- listener.c: listening sockets and the accept work item ------------------------------ */

_IRQL_requires_(PASSIVE_LEVEL) NTSTATUS NksListen(_Inout_ PNKS_DEVICE Device, _In_ PFILE_OBJECT Owner,
                                                   _In_ const NDKSOCK_LISTEN_IN *Input,
                                                   _Out_ NDKSOCK_SOCKET_OUT *Output);
_IRQL_requires_max_(APC_LEVEL) NTSTATUS NksAccept(_In_ PNKS_SOCKET Listener, _Inout_ PIRP Irp);
/* Stops the listener taking connections and cancels its ACCEPTs. */
_IRQL_requires_(PASSIVE_LEVEL) VOID NksListenerShutdown(_Inout_ PNKS_SOCKET Listener);
/* Once no accept runs any more: closes the connections nobody took and starts the listener's close. */
_IRQL_requires_(PASSIVE_LEVEL) VOID NksListenerRelease(_Inout_ PNKS_SOCKET Listener);
