#include "CWebSockets.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libwebsockets.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct vf_ws_server {
    struct lws_context *context;
    struct lws_vhost *vhost;
    vf_ws_handler handler;
    void *handler_context;
    struct lws_protocols protocols[2];
};

#define CONNECTION(wsi) ((vf_ws_connection *)(wsi))
#define WSI(connection) ((struct lws *)(connection))

static int vf_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct vf_ws_server *server = wsi ? (struct vf_ws_server *)lws_context_user(lws_get_context(wsi)) : NULL;
    int event = 0;
    switch (reason) {
    case LWS_CALLBACK_HTTP: event = VF_WS_EVENT_HTTP; break;
    case LWS_CALLBACK_HTTP_WRITEABLE: event = VF_WS_EVENT_HTTP_WRITEABLE; break;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: event = VF_WS_EVENT_CONFIRM_UPGRADE; break;
    case LWS_CALLBACK_ESTABLISHED: event = VF_WS_EVENT_ESTABLISHED; break;
    case LWS_CALLBACK_RECEIVE: event = VF_WS_EVENT_RECEIVE; break;
    case LWS_CALLBACK_SERVER_WRITEABLE: event = VF_WS_EVENT_WRITEABLE; break;
    case LWS_CALLBACK_CLOSED:
    case LWS_CALLBACK_CLOSED_HTTP:
    case LWS_CALLBACK_WSI_DESTROY: event = VF_WS_EVENT_CLOSED; break;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: event = VF_WS_EVENT_WAKE; break;
    default: break;
    }
    // The server is NULL while the context is being created (before lws_context_user is set).
    if (!event || !server || !server->handler) return lws_callback_http_dummy(wsi, reason, user, in, len);
    int result = server->handler(server->handler_context, CONNECTION(wsi), event, in, len);
    switch (event) {
    case VF_WS_EVENT_CONFIRM_UPGRADE: return result;  // 1: answered, the transaction is over
    case VF_WS_EVENT_CLOSED: return lws_callback_http_dummy(wsi, reason, user, in, len);
    case VF_WS_EVENT_WAKE: return 0;
    default: return result ? -1 : 0;
    }
}

// libwebsockets does not keep bind's errno: bind a socket the same way to learn it.
static int bind_error(int ipv6, const struct in_addr *address4, const struct in6_addr *address6, int port) {
    int fd = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return errno;
    int result;
    if (ipv6) {
        struct sockaddr_in6 address = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = *address6};
        result = bind(fd, (struct sockaddr *)&address, sizeof address);
    } else {
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = *address4};
        result = bind(fd, (struct sockaddr *)&address, sizeof address);
    }
    int error = result ? errno : EADDRNOTAVAIL;
    close(fd);
    return error;
}

vf_ws_server *vf_ws_server_create(const char *address, int port, vf_ws_handler handler, void *context) {
    struct in6_addr address6;
    struct in_addr address4;
    int ipv6 = inet_pton(AF_INET6, address, &address6) == 1;
    if (!ipv6 && inet_pton(AF_INET, address, &address4) != 1) {
        errno = EINVAL;
        return NULL;
    }
    struct vf_ws_server *server = calloc(1, sizeof *server);
    if (!server) return NULL;
    server->handler = handler;
    server->handler_context = context;
    server->protocols[0].name = "viewfinder-preview";
    server->protocols[0].callback = vf_ws_callback;
    server->protocols[0].rx_buffer_size = 4096;

    // libwebsockets' own log: errors only, unless VIEWFINDER_LWS_LOG gives its LLL_ bit mask.
    const char *log_mask = getenv("VIEWFINDER_LWS_LOG");
    lws_set_log_level(log_mask ? atoi(log_mask) : LLL_ERR, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    // One vhost, created explicitly so that a bind failure is seen here; IPv6 sockets are only
    // used for an IPv6 address (libwebsockets would otherwise bind an IPv4 literal on "::").
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND
        | (ipv6 ? 0 : LWS_SERVER_OPTION_DISABLE_IPV6);
    info.user = server;
    info.port = CONTEXT_PORT_NO_LISTEN;
    server->context = lws_create_context(&info);
    if (!server->context) {
        free(server);
        errno = ENOMEM;
        return NULL;
    }
    info.port = port;
    info.iface = address;
    info.protocols = server->protocols;
    info.vhost_name = "viewfinder-preview";
    errno = 0;
    server->vhost = lws_create_vhost(server->context, &info);
    if (!server->vhost || lws_get_vhost_listen_port(server->vhost) <= 0) {
        int saved = bind_error(ipv6, &address4, &address6, port);
        lws_context_destroy(server->context);
        free(server);
        errno = saved;
        return NULL;
    }
    return server;
}

int vf_ws_server_port(vf_ws_server *server) { return lws_get_vhost_listen_port(server->vhost); }

int vf_ws_server_service(vf_ws_server *server) { return lws_service(server->context, 0); }

void vf_ws_server_wake(vf_ws_server *server) { lws_cancel_service(server->context); }

void vf_ws_server_destroy(vf_ws_server *server) {
    lws_context_destroy(server->context);
    free(server);
}

size_t vf_ws_pre_padding(void) { return LWS_PRE; }

int vf_ws_header(vf_ws_connection *connection, int which, char *buffer, int capacity) {
    enum lws_token_indexes token;
    switch (which) {
    case VF_WS_HEADER_ORIGIN: token = WSI_TOKEN_ORIGIN; break;
    case VF_WS_HEADER_HOST: token = WSI_TOKEN_HOST; break;
    case VF_WS_HEADER_QUERY: token = WSI_TOKEN_HTTP_URI_ARGS; break;
    case VF_WS_HEADER_PATH: token = WSI_TOKEN_GET_URI; break;
    default: return -1;
    }
    if (lws_hdr_total_length(WSI(connection), token) <= 0) return -1;
    return lws_hdr_copy(WSI(connection), buffer, capacity, token);
}

int vf_ws_query_argument(vf_ws_connection *connection, const char *name, char *buffer, int capacity) {
    char key[64], fragment[1024];
    if (lws_snprintf(key, sizeof key, "%s=", name) >= (int)sizeof key - 1) return -1;
    const char *value = lws_get_urlarg_by_name(WSI(connection), key, fragment, (int)sizeof fragment);
    if (!value) return -1;
    size_t count = strlen(value);
    if (count >= (size_t)capacity) return -1;
    memcpy(buffer, value, count + 1);
    return (int)count;
}

int vf_ws_is_get(vf_ws_connection *connection) { return lws_hdr_total_length(WSI(connection), WSI_TOKEN_GET_URI) > 0; }

int vf_ws_respond_headers(vf_ws_connection *connection, int status, const char *content_type,
                          long long content_length, const char *extra_headers) {
    uint8_t buffer[LWS_PRE + 2048];
    uint8_t *start = buffer + LWS_PRE, *p = start, *end = buffer + sizeof buffer - 1;
    lws_filepos_t length = content_length < 0 ? LWS_ILLEGAL_HTTP_CONTENT_LEN : (lws_filepos_t)content_length;
    if (lws_add_http_common_headers(WSI(connection), (unsigned int)status, content_type, length, &p, end)) return -1;
    // "name: value\r\n" lines, each added through libwebsockets so HTTP/2 would encode them.
    for (const char *line = extra_headers; line && *line;) {
        const char *colon = strchr(line, ':');
        const char *eol = strstr(line, "\r\n");
        if (!colon || !eol || colon > eol) return -1;
        char name[128];
        size_t name_length = (size_t)(colon - line);
        if (name_length + 2 > sizeof name) return -1;
        memcpy(name, line, name_length);
        name[name_length] = ':';
        name[name_length + 1] = '\0';
        const char *value = colon + 1;
        while (*value == ' ') value++;
        if (lws_add_http_header_by_name(WSI(connection), (const unsigned char *)name, (const unsigned char *)value,
                                        (int)(eol - value), &p, end))
            return -1;
        line = eol + 2;
    }
    return lws_finalize_write_http_header(WSI(connection), start, &p, end) ? -1 : 0;
}

int vf_ws_respond_status(vf_ws_connection *connection, int status) {
    if (lws_return_http_status(WSI(connection), (unsigned int)status, NULL)) return -1;
    return lws_http_transaction_completed(WSI(connection)) ? -1 : 0;
}

int vf_ws_transaction_completed(vf_ws_connection *connection) {
    return lws_http_transaction_completed(WSI(connection)) ? -1 : 0;
}

void vf_ws_release_headers(vf_ws_connection *connection) { lws_http_headers_detach(WSI(connection)); }

void vf_ws_cancel_timeout(vf_ws_connection *connection) { lws_set_timeout(WSI(connection), NO_PENDING_TIMEOUT, 0); }

int vf_ws_write(vf_ws_connection *connection, uint8_t *data, size_t length, int kind) {
    enum lws_write_protocol protocol;
    switch (kind) {
    case VF_WS_WRITE_HTTP: protocol = LWS_WRITE_HTTP; break;
    case VF_WS_WRITE_HTTP_FINAL: protocol = LWS_WRITE_HTTP_FINAL; break;
    case VF_WS_WRITE_TEXT: protocol = LWS_WRITE_TEXT; break;
    case VF_WS_WRITE_BINARY: protocol = LWS_WRITE_BINARY; break;
    default: return -1;
    }
    int written = lws_write(WSI(connection), data, length, protocol);
    return written < (int)length ? -1 : 0;
}

void vf_ws_request_writable(vf_ws_connection *connection) { lws_callback_on_writable(WSI(connection)); }

int vf_ws_is_choked(vf_ws_connection *connection) { return lws_send_pipe_choked(WSI(connection)); }

int vf_ws_is_final_fragment(vf_ws_connection *connection) { return lws_is_final_fragment(WSI(connection)); }

int vf_ws_is_binary(vf_ws_connection *connection) { return lws_frame_is_binary(WSI(connection)); }
