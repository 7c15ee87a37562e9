#ifndef VIEWFINDER_CWEBSOCKETS_H
#define VIEWFINDER_CWEBSOCKETS_H
// libwebsockets 4.1 (Debian 12's libwebsockets-dev) as a few plain functions: one HTTP +
// WebSocket server on one vhost, its events forwarded to a single handler, and lws_write with
// the LWS_PRE headroom it needs. libwebsockets.h itself stays out of Swift (it pulls in OpenSSL
// and many macros); every decision about what to serve is the Swift side's.
#include <stddef.h>
#include <stdint.h>

/// One server: a libwebsockets context with one listening vhost.
typedef struct vf_ws_server vf_ws_server;
/// One connection (libwebsockets' `struct lws`), valid only inside the handler call that
/// names it and until its `VF_WS_EVENT_CLOSED`.
typedef struct vf_ws_connection vf_ws_connection;

/// What the handler is told.
enum vf_ws_event {
    /// An HTTP request's headers arrived: `data`/`length` is the URL path (without the query).
    VF_WS_EVENT_HTTP = 1,
    /// An HTTP connection asked for with `vf_ws_request_writable` can take more data.
    VF_WS_EVENT_HTTP_WRITEABLE = 2,
    /// A request asks to upgrade (`data` is the Upgrade header, e.g. "websocket"). Return 0 to
    /// allow it, or answer with `vf_ws_respond_status` and return 1 to refuse it.
    VF_WS_EVENT_CONFIRM_UPGRADE = 3,
    /// A WebSocket handshake completed.
    VF_WS_EVENT_ESTABLISHED = 4,
    /// A WebSocket message (or fragment of one) arrived: see `vf_ws_is_final_fragment`.
    VF_WS_EVENT_RECEIVE = 5,
    /// A WebSocket asked for with `vf_ws_request_writable` can take another message.
    VF_WS_EVENT_WRITEABLE = 6,
    /// The connection is gone (may be reported more than once for one connection).
    VF_WS_EVENT_CLOSED = 7,
    /// `vf_ws_server_wake` was called (from any thread); `connection` is not a client.
    VF_WS_EVENT_WAKE = 8,
};

/// Called on the service thread for every event. Returns 0 to go on, -1 to close the
/// connection (for `VF_WS_EVENT_CONFIRM_UPGRADE`, 1: refused, an answer was written).
typedef int (*vf_ws_handler)(void *context, vf_ws_connection *connection, int event, const void *data,
                             size_t length);

/// Starts listening on numeric IPv4 or IPv6 `address`, TCP `port` (0: any free one). Returns
/// NULL if the address is not numeric (errno EINVAL) or cannot be bound (errno as bind left it,
/// EADDRINUSE when taken, else EADDRNOTAVAIL).
vf_ws_server *vf_ws_server_create(const char *address, int port, vf_ws_handler handler, void *context);
/// The port the server listens on.
int vf_ws_server_port(vf_ws_server *server);
/// Serves events until something happens; call in a loop on one thread. Negative: stop.
int vf_ws_server_service(vf_ws_server *server);
/// Wakes the service thread (thread-safe): the handler gets `VF_WS_EVENT_WAKE`.
void vf_ws_server_wake(vf_ws_server *server);
/// Closes every connection (their CLOSED events are delivered) and frees the server. Call on
/// the thread that ran `vf_ws_server_service`, after it returned for the last time.
void vf_ws_server_destroy(vf_ws_server *server);

/// Bytes that must be writable before any buffer given to `vf_ws_write` (libwebsockets' LWS_PRE).
size_t vf_ws_pre_padding(void);

/// Copies request header `which` into `buffer` (NUL-terminated): its length, or -1 if absent or
/// longer than `capacity - 1`.
/// (VF_WS_HEADER_PATH: a GET request's path, without the query.)
enum vf_ws_header { VF_WS_HEADER_ORIGIN = 1, VF_WS_HEADER_HOST = 2, VF_WS_HEADER_QUERY = 3, VF_WS_HEADER_PATH = 4 };
int vf_ws_header(vf_ws_connection *connection, int which, char *buffer, int capacity);
/// Copies the value of query argument `name` (e.g. "token") into `buffer`: its length, or -1 if
/// absent or too long.
int vf_ws_query_argument(vf_ws_connection *connection, const char *name, char *buffer, int capacity);
/// Whether the request is a GET.
int vf_ws_is_get(vf_ws_connection *connection);

/// Writes an HTTP status line and headers: `content_length` < 0 means none (the connection then
/// closes after the body); `extra_headers` is NULL or "name: value\r\n" lines. 0 or -1.
int vf_ws_respond_headers(vf_ws_connection *connection, int status, const char *content_type,
                          long long content_length, const char *extra_headers);
/// Answers with a short status page and ends the transaction: 0 to keep the connection, -1 to
/// close it (return it from the handler).
int vf_ws_respond_status(vf_ws_connection *connection, int status);
/// Ends an HTTP transaction whose body was written: 0 to keep the connection, -1 to close it.
int vf_ws_transaction_completed(vf_ws_connection *connection);
/// Releases the request's header storage (for a response that lasts, like a stream).
void vf_ws_release_headers(vf_ws_connection *connection);
/// Cancels libwebsockets' pending timeout on the connection (which would end a response still
/// being written, such as a stream, after a few seconds).
void vf_ws_cancel_timeout(vf_ws_connection *connection);

/// How `vf_ws_write` frames the bytes.
enum vf_ws_write_kind { VF_WS_WRITE_HTTP = 0, VF_WS_WRITE_HTTP_FINAL = 1, VF_WS_WRITE_TEXT = 2, VF_WS_WRITE_BINARY = 3 };
/// Writes `length` bytes at `data`, which must have `vf_ws_pre_padding()` writable bytes before
/// it (libwebsockets puts framing there). What the socket does not take now is kept by
/// libwebsockets and sent before the next writeable event. Returns 0, or -1 (close it).
int vf_ws_write(vf_ws_connection *connection, uint8_t *data, size_t length, int kind);
/// Asks for one VF_WS_EVENT_(HTTP_)WRITEABLE when the connection can take more.
void vf_ws_request_writable(vf_ws_connection *connection);
/// Whether the connection still holds unsent data (its socket is full).
int vf_ws_is_choked(vf_ws_connection *connection);
/// For VF_WS_EVENT_RECEIVE: whether this is the last fragment of its message, and whether the
/// message is binary.
int vf_ws_is_final_fragment(vf_ws_connection *connection);
int vf_ws_is_binary(vf_ws_connection *connection);

#endif
