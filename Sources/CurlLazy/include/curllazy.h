// libcurl, loaded when first used: see curllazy.c.
#ifndef MP4PROBE_CURLLAZY_H
#define MP4PROBE_CURLLAZY_H

/// Whether libcurl has been loaded (https has been used) in this process: 1 yes, 0 no.
int mp4probe_curl_loaded(void);

#endif
