import NIOCore
import Synchronization
import Testing
@testable import NearbyCore
@testable import NearbyBase
@testable import NearbyWire

@Suite struct WaitingFramesTests {
    private func message(_ bytes: Int) -> Frame { Frame(kind: .message, payload: ByteBuffer(repeating: 0, count: bytes)) }

    @Test func framesThatWentUpAreChargedToTheLinkAndTheNodeUntilHandled() {
        let budget = MemoryBudget(limit: 4 << 20)
        let waiting = WaitingFrames(budget: budget)
        let woken = Atomic(0)
        waiting.wentUp(Frame(kind: .ping))
        waiting.wentUp(message(512 << 10))
        // A file's data is bounded by its window, not here.
        waiting.wentUp(Frame(kind: .data, channel: 1, payload: ByteBuffer(repeating: 0, count: 1 << 20)))
        #expect(!waiting.over { woken.add(1, ordering: .relaxed) })
        waiting.wentUp(message(600 << 10))
        #expect(waiting.over { woken.add(1, ordering: .relaxed) })
        // Messages take the node's budget; the ping and the data do not.
        #expect(budget.used == 2 * Frame.headerSize + (512 << 10) + (600 << 10))
        waiting.handled()  // the ping: still over
        #expect(woken.load(ordering: .relaxed) == 0)
        waiting.handled()  // the first message: the link may read again
        #expect(woken.load(ordering: .relaxed) == 1)
        #expect(budget.used == Frame.headerSize + (600 << 10))
        waiting.end()
        #expect(budget.used == 0 && waiting.bytes == 0)
        // Late: nothing is charged once the link ended, nothing handled twice.
        waiting.wentUp(message(1 << 20))
        waiting.handled()
        #expect(budget.used == 0)
    }
}
