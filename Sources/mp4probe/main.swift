import MP4ProbeCLI
import CurlLazy  // libcurl is loaded when https is first used (Linux)

await MP4Probe.main()
