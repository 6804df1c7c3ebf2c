import MP4ProbeCLI
import CurlLazy  // libcurl is loaded when https is first used (Linux)

// Not an async main, which hands the command to a worker thread at once: start() runs it on
// this thread until it first waits.
MP4Probe.start()
