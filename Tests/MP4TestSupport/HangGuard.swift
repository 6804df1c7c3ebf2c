import Testing

extension Trait where Self == TimeLimitTrait {
    /// The time limit of every test or suite that could hang (a server that never answers, a
    /// loop without its bound): 10 minutes, longer than a whole suite takes.
    ///
    /// A limit is not a speed test. Swift Testing starts the tests of a run at once and a test's
    /// time counts its wait for the machine: with 483 tests on two cores, trivial tests report
    /// 60-100 s in the plain suite, and in CI's AddressSanitizer suite (441 s in all) a test ran
    /// 338 s from its start. Limits of 1-3 minutes failed CI three times (7290e81, 69401d4)
    /// without anything hanging; a suite's limit also overrides a longer one on its tests.
    public static var hangGuard: Self { .timeLimit(.minutes(10)) }
}
