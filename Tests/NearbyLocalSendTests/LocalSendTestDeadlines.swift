import Foundation

/// A stranger's LocalSend session must move its bytes within a grace of 60 s; in a full test run
/// on a loaded machine, CPU-bound suites held the cooperative threads for longer than that between
/// a test's prepare-upload and its uploads (403: the session had been ended). The grace is raised
/// for this process, as `TestNodes.relaxDeadlines` raises the links'; tests of the floor itself
/// run end to end with their own settings.
enum LocalSendTestDeadlines {
    static func relax() {
        setenv("NEARBY_LOCALSEND_GRACE_MS", "600000", 0)
    }
}
