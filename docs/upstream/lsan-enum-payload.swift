// LeakSanitizer and Swift's multi-payload enums: an object held only through an enum case whose
// tag Swift keeps in the reference's spare bits is reported as a direct leak.
#if canImport(Glibc)
import Glibc
#endif
final class Payload { var bytes = [UInt8](repeating: 1, count: 500) }
enum Two { case first(Payload), second(Payload) }
nonisolated(unsafe) var keptFirst: Two? = nil
nonisolated(unsafe) var keptSecond: Two? = nil
nonisolated(unsafe) var keptPlain: Payload? = nil
@inline(never) func keep() { keptFirst = .first(Payload()); keptSecond = .second(Payload()); keptPlain = Payload() }
@inline(never) func scrubStack() { var junk = [UInt8](repeating: 0, count: 1); withUnsafeTemporaryAllocation(of: UInt.self, capacity: 4096) { $0.initialize(repeating: 0); junk[0] = UInt8($0[7]) }; _ = junk }
func word<T>(_ value: inout T) -> String { withUnsafeBytes(of: &value) { "0x" + String($0.load(as: UInt.self), radix: 16) } }
@main struct Main {
    static func main() {
        keep(); scrubStack()
        fputs("kept as .first: \(word(&keptFirst)), as .second: \(word(&keptSecond)), plain: \(word(&keptPlain))\n", stderr)
    }
}

// The same with Foundation's Data (more than 14 bytes are kept in `.slice`, whose reference carries
// the tag): `kept = Data(base64Encoded: ninetyOneBytes)` in a global is reported as a direct leak of
// 65 bytes (the storage) and an indirect one of 93 (its bytes), stored as 0x4000_7bxx_xxxx_xxxx.
