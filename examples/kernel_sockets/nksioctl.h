/* SPDX-License-Identifier: MIT */
/* nksioctl.h - the I/O control interface of the NDK sockets driver (ndksock.sys): what a program
 * that opens \\.\NdkSock sends it. Shared by the driver and its user-mode clients, so it uses only
 * fixed-width C types and needs neither the WDK headers nor <windows.h>; in the driver, <wdm.h>
 * has already defined CTL_CODE and the transfer methods. Every request is METHOD_BUFFERED. */
#ifndef NDKSOCK_NKSIOCTL_H_
#define NDKSOCK_NKSIOCTL_H_

#include <stddef.h>
#include <stdint.h>

#ifndef CTL_CODE /* user mode: what <winioctl.h> defines */
#define CTL_CODE(DeviceType, Function, Method, Access) \
    (((uint32_t)(DeviceType) << 16) | ((uint32_t)(Access) << 14) | ((uint32_t)(Function) << 2) | (uint32_t)(Method))
#define METHOD_BUFFERED 0
#define FILE_ANY_ACCESS 0
#define FILE_READ_ACCESS 0x0001
#define FILE_WRITE_ACCESS 0x0002
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The path a program opens (CreateFile); the driver links \DosDevices\NdkSock to its device. */
#define NDKSOCK_USER_PATH "\\\\.\\NdkSock"

/* Device types from 0x8000 up are the vendors' own. */
#define FILE_DEVICE_NDKSOCK 0x0000A5D4u

/* Opens a listening socket on a local address (in: NDKSOCK_LISTEN_IN; out: NDKSOCK_SOCKET_OUT). */
#define IOCTL_NDKSOCK_LISTEN CTL_CODE(FILE_DEVICE_NDKSOCK, 0x801, METHOD_BUFFERED, FILE_READ_ACCESS | FILE_WRITE_ACCESS)
/* Takes the next connection a listening socket accepted; pends until there is one, and may be
 * cancelled (in: NDKSOCK_SOCKET_IN, the listener; out: NDKSOCK_SOCKET_OUT, the connection). */
#define IOCTL_NDKSOCK_ACCEPT CTL_CODE(FILE_DEVICE_NDKSOCK, 0x802, METHOD_BUFFERED, FILE_READ_ACCESS | FILE_WRITE_ACCESS)
/* Connects to a remote address from a local one; returns once connected or refused
 * (in: NDKSOCK_CONNECT_IN; out: NDKSOCK_SOCKET_OUT). */
#define IOCTL_NDKSOCK_CONNECT \
    CTL_CODE(FILE_DEVICE_NDKSOCK, 0x803, METHOD_BUFFERED, FILE_READ_ACCESS | FILE_WRITE_ACCESS)
/* Sends bytes; completes once the peer's adapter has taken all of them, which flow control may
 * hold up until the peer's program reads (in: NDKSOCK_SEND_IN and the data; out: NDKSOCK_SEND_OUT). */
#define IOCTL_NDKSOCK_SEND CTL_CODE(FILE_DEVICE_NDKSOCK, 0x804, METHOD_BUFFERED, FILE_WRITE_ACCESS)
/* Receives up to the output buffer's length of bytes; pends until at least one has arrived.
 * Information 0 with STATUS_SUCCESS: the peer disconnected and every byte has been read.
 * Cancellable (in: NDKSOCK_SOCKET_IN; out: the bytes). */
#define IOCTL_NDKSOCK_RECEIVE CTL_CODE(FILE_DEVICE_NDKSOCK, 0x805, METHOD_BUFFERED, FILE_READ_ACCESS)
/* Closes a socket: requests still pending on it complete with STATUS_CANCELLED, a connection is
 * disconnected (in: NDKSOCK_SOCKET_IN). */
#define IOCTL_NDKSOCK_CLOSE CTL_CODE(FILE_DEVICE_NDKSOCK, 0x806, METHOD_BUFFERED, FILE_READ_ACCESS | FILE_WRITE_ACCESS)
/* The driver's statistics, and a socket's when one is named (in: NDKSOCK_SOCKET_IN, Socket 0 for
 * the driver's only; out: NDKSOCK_QUERY_OUT). */
#define IOCTL_NDKSOCK_QUERY CTL_CODE(FILE_DEVICE_NDKSOCK, 0x807, METHOD_BUFFERED, FILE_ANY_ACCESS)

/* "a.b.c.d:port" and its terminating NUL fit. */
#define NDKSOCK_ADDRESS_CHARS 24
/* Accepted connections a listener keeps for ACCEPT at most. */
#define NDKSOCK_MAX_BACKLOG 8

/* A socket's handle within the driver; 0 is none. */
typedef uint32_t NDKSOCK_SOCKET;

typedef struct _NDKSOCK_LISTEN_IN {
    uint16_t Address[NDKSOCK_ADDRESS_CHARS]; /* L"a.b.c.d:port", UTF-16, NUL-terminated; the port is not 0 */
    uint32_t Backlog;                        /* 1..NDKSOCK_MAX_BACKLOG */
} NDKSOCK_LISTEN_IN;

typedef struct _NDKSOCK_CONNECT_IN {
    /* L"a.b.c.d" or L"a.b.c.d:port": an address of this machine, which picks the RNIC to use. */
    uint16_t LocalAddress[NDKSOCK_ADDRESS_CHARS];
    uint16_t RemoteAddress[NDKSOCK_ADDRESS_CHARS]; /* L"a.b.c.d:port" */
} NDKSOCK_CONNECT_IN;

typedef struct _NDKSOCK_SOCKET_IN {
    NDKSOCK_SOCKET Socket;
} NDKSOCK_SOCKET_IN;

typedef struct _NDKSOCK_SOCKET_OUT {
    NDKSOCK_SOCKET Socket;
    char PeerAddress[NDKSOCK_ADDRESS_CHARS]; /* "a.b.c.d:port"; empty for a listener */
} NDKSOCK_SOCKET_OUT;

typedef struct _NDKSOCK_SEND_IN {
    NDKSOCK_SOCKET Socket;
    uint32_t Length; /* of Data, at least 1; the input buffer holds NDKSOCK_SEND_IN_SIZE(Length) bytes */
    uint8_t Data[1];
} NDKSOCK_SEND_IN;
#define NDKSOCK_SEND_IN_SIZE(Length) (offsetof(NDKSOCK_SEND_IN, Data) + (size_t)(Length))

typedef struct _NDKSOCK_SEND_OUT {
    uint32_t BytesSent;
} NDKSOCK_SEND_OUT;

/* NDKSOCK_SOCKET_INFO.State */
#define NDKSOCK_STATE_LISTENING 1
#define NDKSOCK_STATE_CONNECTED 2
#define NDKSOCK_STATE_DISCONNECTED 3 /* the peer disconnected */
#define NDKSOCK_STATE_FAILED 4       /* the connection failed; Status says how */

typedef struct _NDKSOCK_DEVICE_STATS {
    uint32_t SocketsOpen;
    uint32_t AdaptersOpen; /* NDK adapters open now: one per socket, and a closed listener's while
                              connections it accepted remain */
    uint64_t SocketsCreated;
    uint64_t AdaptersOpened;
    uint64_t ConnectionsAccepted;
    uint64_t ConnectionsRejected;
    uint64_t ConnectionsFailed; /* connections that ended in an error, not a disconnect */
    uint64_t BytesSent;
    uint64_t BytesReceived;
    uint64_t RequestsCancelled; /* pending requests completed with STATUS_CANCELLED */
} NDKSOCK_DEVICE_STATS;

typedef struct _NDKSOCK_SOCKET_INFO {
    NDKSOCK_SOCKET Socket;
    uint32_t State;          /* NDKSOCK_STATE_* */
    int32_t Status;          /* NTSTATUS: what ended the connection, or 0 */
    uint32_t InterfaceIndex; /* of the RNIC the socket's adapter was opened on */
    char LocalAddress[NDKSOCK_ADDRESS_CHARS];
    char PeerAddress[NDKSOCK_ADDRESS_CHARS];
    uint32_t ReceiveDepth;     /* receives for data this side grants as credits; one more is
                                  kept posted for the peer's credit messages */
    uint32_t PeerReceiveDepth; /* ... and the peer's: the credits it granted when connecting */
    uint32_t SendCredits;      /* data messages the peer has receives posted for */
    uint32_t PostedReceives;
    uint32_t BufferedBytes;    /* arrived and not yet received by the program */
    uint32_t DisconnectReason; /* the provider's, from the disconnect event */
    uint64_t BytesSent;
    uint64_t BytesReceived;
    uint64_t MessagesSent;
    uint64_t MessagesReceived;
    uint64_t CreditMessagesSent;     /* messages that carried credits and no data */
    uint64_t CreditMessagesReceived;
    uint64_t CreditStalls;           /* times a send had data ready and no credit to send it */
} NDKSOCK_SOCKET_INFO;

typedef struct _NDKSOCK_QUERY_OUT {
    NDKSOCK_DEVICE_STATS Device;
    NDKSOCK_SOCKET_INFO Socket; /* zero when no socket was named */
} NDKSOCK_QUERY_OUT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDKSOCK_NKSIOCTL_H_ */
