import MP4ProbeCLI

await MP4Probe.main()
