// ThreadSanitizer reports races inside Synchronization.Mutex's withLock on Linux: a contended
// Mutex is handed to its next owner inside the kernel (a priority-inheritance futex,
// FUTEX_UNLOCK_PI / FUTEX_LOCK_PI), with no user-space atomic TSan can pair, so what the next owner
// touches under the lock looks unordered. The same program with a pthread mutex: no report.
//   swiftc -O -sanitize=thread mutex-tsan.swift -o /tmp/mutex && /tmp/mutex
import Foundation
import Synchronization

final class Box: Sendable {
    let values = Mutex<[Int]>([])
}

let box = Box()
let done = DispatchGroup()
for n in 0..<4 {
    done.enter()
    Thread {
        for i in 0..<20_000 { box.values.withLock { $0.append(n * 100_000 + i) } }
        done.leave()
    }.start()
}
done.wait()
print(box.values.withLock { $0.count })
