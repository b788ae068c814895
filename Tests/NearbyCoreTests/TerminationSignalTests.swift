import Foundation
import Testing
@testable import NearbyCore
@testable import NearbyBase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM reach a waiter through the handler's pipe: a signal that comes before anyone
/// waits (or before the read source is registered) is kept, never ignored. Only this suite raises a
/// signal in the test process, and nothing else in it waits for one.
@Suite(.timeLimit(.minutes(1))) struct TerminationSignalTests {
    @Test func aSignalRaisedAtOnceAfterInstallingIsKeptForTheNextWait() async {
        TerminationSignal.install()
        // To the process, as Ctrl-C and kill(1) send it (raise(3) would aim at this thread, which
        // the cooperative pool's threads keep blocked); the read source may not be registered yet.
        kill(getpid(), SIGTERM)
        #expect(await TerminationSignal.next() == SIGTERM)
        // Sticky: the process is ending, every later wait returns at once with the first signal.
        #expect(await TerminationSignal.next() == SIGTERM)
        // The test process ends on Ctrl-C and kill(1) again, as before this test.
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
