import Testing
@testable import NearbyBase

/// The one deadline race: the work's value when it comes first, nil when the deadline does, a
/// value produced too late handed to `discard` (doctor closes a connection opened after its
/// --timeout with it), and the throwing form's errors passed on.
@Suite struct FirstResultTests {
    struct Failure: Error {}

    @Test func theWorkThatEndsFirstWins() async {
        let value = await firstResult(within: .seconds(120)) { 7 }
        #expect(value == 7)
    }

    @Test func aResultProducedAfterTheDeadlineIsDiscardedNotDropped() async {
        let discarded = Locked<[Int]>([])
        let value: Int? = await firstResult(until: .now, discard: { late in discarded.withLock { $0.append(late) } }) {
            // Ignores its cancellation (the deadline cancels the sleep), as a connect that completes anyway does.
            try? await Task.sleep(for: .seconds(120))
            return 9
        }
        #expect(value == nil)
        #expect(discarded.withLock { $0 } == [9])
    }

    @Test func theThrowingFormPassesOnTheWorksError() async {
        await #expect(throws: Failure.self) {
            _ = try await firstThrowingResult(within: .seconds(120)) { () async throws -> Int in throw Failure() }
        }
        let late = try? await firstThrowingResult(within: .milliseconds(1)) { () async throws -> Int in
            try await Task.sleep(for: .seconds(120))
            return 1
        }
        #expect(late == .some(nil))
    }

    @Test func theThrowingFormThrowsCancellationWhenItsTaskIsCancelled() async {
        let task = Task { try await firstThrowingResult(within: .seconds(120)) { () async throws -> Int in
            try await Task.sleep(for: .seconds(120))
            return 1
        } }
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
    }
}
