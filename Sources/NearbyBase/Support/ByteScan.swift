/// Questions about every byte of a text, asked eight bytes at a time (SWAR: one 64-bit word holds
/// eight bytes, and a borrow or carry into a byte's top bit flags it). Each event line is asked
/// both questions once; at 100,000 messages a second a byte-by-byte loop was a tenth of a
/// receiving node's time.
enum ByteScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let tops: UInt64 = 0x8080_8080_8080_8080

    /// Whether some byte of `w` is below `n` (n ≤ 0x80): exact as a yes or no.
    @inline(__always)
    private static func hasLess(_ w: UInt64, _ n: UInt8) -> Bool { (w &- ones &* UInt64(n)) & ~w & tops != 0 }

    /// Whether some byte of `w` is `byte`.
    @inline(__always)
    private static func has(_ w: UInt64, _ byte: UInt8) -> Bool { hasLess(w ^ (ones &* UInt64(byte)), 1) }

    /// Whether every byte of `text` is printable ASCII (0x20 to 0x7E).
    static func isPrintableASCII(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            every(bytes, word: { w in !hasLess(w, 0x20) && (w &+ ones | w) & tops == 0 }, byte: { $0 >= 0x20 && $0 < 0x7F })
        }
    }

    /// Whether some byte of `text` must be escaped in a JSON string: a control byte, `"` or `\`.
    static func needsJSONEscape(_ text: String) -> Bool {
        var text = text
        return !text.withUTF8 { bytes in
            every(bytes, word: { w in !hasLess(w, 0x20) && !has(w, 0x22) && !has(w, 0x5C) }, byte: { $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C })
        }
    }

    @inline(__always)
    private static func every(_ bytes: UnsafeBufferPointer<UInt8>, word: (UInt64) -> Bool, byte: (UInt8) -> Bool) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var i = 0
        while i + 8 <= bytes.count {
            guard word(UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) else { return false }
            i += 8
        }
        while i < bytes.count {
            guard byte(base[i]) else { return false }
            i += 1
        }
        return true
    }
}
