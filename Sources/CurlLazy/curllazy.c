// libcurl, loaded when first used, for the mp4probe executable only.
//
// FoundationNetworking (URLSession, which mp4probe uses for https only) calls libcurl. Linked
// normally, libcurl and the two dozen libraries it needs (OpenSSL, nghttp2, LDAP, Kerberos...)
// are loaded and relocated at every start: 7.5 ms of a static mp4probe's 10 ms on the
// development machine, for commands that never touch https. This file defines the libcurl
// functions FoundationNetworking calls as forwarders that dlopen libcurl.so.4 the first time
// one is called. The release build (README) links no libcurl (an empty libcurl.a stands in
// for it); in a build that does link it (the default dynamic build), these definitions take
// precedence and forward to the loaded library, so both work.
//
// The three variadic functions (curl_easy_setopt, curl_easy_getinfo, curl_multi_setopt)
// take exactly one argument after the option: a long, a pointer or a curl_off_t, all passed
// in one general-purpose register (or stack slot) on LP64 platforms, so it is forwarded as a
// pointer-sized value.
#if defined(__linux__)
#define _GNU_SOURCE
#include "curllazy.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void *library;
static pthread_once_t loading = PTHREAD_ONCE_INIT;

static void load(void) {
    library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) library = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fprintf(stderr, "mp4probe: https needs libcurl (libcurl.so.4; Debian: apt-get install libcurl4): %s\n", dlerror());
        exit(4);
    }
}

static void *resolve(const char *name) {
    pthread_once(&loading, load);
    void *function = dlsym(library, name);
    if (function == NULL) {
        fprintf(stderr, "mp4probe: the libcurl found lacks %s\n", name);
        exit(4);
    }
    return function;
}

// Each forwarder keeps the resolved address; URLSession calls from several threads, so it
// is read and written atomically (every thread resolves the same address).
#define FORWARD(ret, name, params, args)                                             \
    ret name params {                                                                \
        static ret(*real) params;                                                    \
        ret(*function) params = __atomic_load_n(&real, __ATOMIC_ACQUIRE);            \
        if (function == NULL) {                                                      \
            function = (ret(*) params)resolve(#name);                                \
            __atomic_store_n(&real, function, __ATOMIC_RELEASE);                     \
        }                                                                            \
        return function args;                                                        \
    }

FORWARD(void *, curl_easy_init, (void), ())
FORWARD(void, curl_easy_cleanup, (void *handle), (handle))
FORWARD(int, curl_easy_pause, (void *handle, int bitmask), (handle, bitmask))
FORWARD(const char *, curl_easy_strerror, (int code), (code))
FORWARD(void, curl_free, (void *pointer), (pointer))
FORWARD(int, curl_global_init, (long flags), (flags))
FORWARD(int, curl_multi_add_handle, (void *multi, void *handle), (multi, handle))
FORWARD(int, curl_multi_assign, (void *multi, int socket, void *pointer), (multi, socket, pointer))
FORWARD(int, curl_multi_cleanup, (void *multi), (multi))
FORWARD(void *, curl_multi_info_read, (void *multi, int *left), (multi, left))
FORWARD(void *, curl_multi_init, (void), ())
FORWARD(int, curl_multi_remove_handle, (void *multi, void *handle), (multi, handle))
FORWARD(int, curl_multi_socket_action, (void *multi, int socket, int mask, int *running), (multi, socket, mask, running))
FORWARD(void *, curl_slist_append, (void *list, const char *text), (list, text))
FORWARD(void, curl_slist_free_all, (void *list), (list))
FORWARD(void *, curl_url, (void), ())
FORWARD(int, curl_url_get, (void *url, int what, char **part, unsigned flags), (url, what, part, flags))
FORWARD(int, curl_url_set, (void *url, int what, const char *part, unsigned flags), (url, what, part, flags))
FORWARD(char *, curl_version, (void), ())
FORWARD(void *, curl_version_info, (int age), (age))

#define FORWARD_ONE_VARIADIC(name)                                                   \
    int name(void *handle, int option, ...) {                                        \
        static int (*real)(void *, int, ...);                                        \
        int (*function)(void *, int, ...) = __atomic_load_n(&real, __ATOMIC_ACQUIRE); \
        if (function == NULL) {                                                      \
            function = (int (*)(void *, int, ...))resolve(#name);                    \
            __atomic_store_n(&real, function, __ATOMIC_RELEASE);                     \
        }                                                                            \
        va_list arguments;                                                           \
        va_start(arguments, option);                                                 \
        void *value = va_arg(arguments, void *);                                     \
        va_end(arguments);                                                           \
        return function(handle, option, value);                                      \
    }

FORWARD_ONE_VARIADIC(curl_easy_setopt)
FORWARD_ONE_VARIADIC(curl_easy_getinfo)
FORWARD_ONE_VARIADIC(curl_multi_setopt)

#endif
