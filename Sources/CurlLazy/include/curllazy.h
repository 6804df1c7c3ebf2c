// libcurl, loaded when first used: curllazy.c defines the libcurl functions FoundationNetworking
// calls, for the mp4probe executable. Nothing here is called from Swift; the module exists so
// that the executable links the definitions.
#ifndef MP4PROBE_CURLLAZY_H
#define MP4PROBE_CURLLAZY_H
#endif
