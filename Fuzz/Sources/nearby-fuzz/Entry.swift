import CFuzzerDriver
import Foundation

/// One fuzz target: a name (scripts/fuzz TARGET, Fuzz/corpus/TARGET, Fuzz/dict/TARGET.dict) and what
/// it does with one input. A check that fails calls `Fuzz.violated`, which traps: libFuzzer keeps the
/// input as a crash reproducer, as it does for a trap inside nearby's own code.
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable ([UInt8]) -> Void
}

enum Fuzz {
    /// Every target (`scripts/fuzz --list` prints them sorted).
    static let targets: [FuzzTarget] = [
        WireTargets.all, DNSTargets.all, WatchTargets.all, WebTargets.all, LocalSendTargets.all, FileTargets.all,
    ].flatMap { $0 }

    static let selected: FuzzTarget? = {
        let name = ProcessInfo.processInfo.environment["NEARBY_FUZZ_TARGET"] ?? ""
        return targets.first { $0.name == name }
    }()

    /// A property that does not hold: stop here, so the input is saved as a reproducer.
    static func violated(_ what: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        FileHandle.standardError.write(Data("nearby-fuzz: property violated: \(what)\n".utf8))
        fatalError("property violated: \(what)", file: file, line: line)
    }

    static func check(_ condition: Bool, _ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        if !condition { violated(what(), file: file, line: line) }
    }

    /// The input cut into pieces, the cuts chosen by its first byte (so libFuzzer explores cuts too):
    /// the rest in chunks of 1...(first byte % 17 + 1) bytes, varying along the input.
    static func pieces(_ input: [UInt8]) -> (whole: [UInt8], pieces: [ArraySlice<UInt8>]) {
        guard let seed = input.first else { return ([], []) }
        let whole = Array(input.dropFirst())
        var out: [ArraySlice<UInt8>] = []
        var at = 0
        var state = UInt32(seed) &* 2_654_435_761 | 1
        while at < whole.count {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            let size = Int(state % (UInt32(seed % 17) + 1)) + 1
            let end = min(whole.count, at + size)
            out.append(whole[at..<end])
            at = end
        }
        return (whole, out)
    }

    /// The input split at its first `separator` byte: (before, after); (input, []) when there is none.
    static func split(_ input: [UInt8], at separator: UInt8 = 0) -> ([UInt8], [UInt8]) {
        guard let index = input.firstIndex(of: separator) else { return (input, []) }
        return (Array(input[..<index]), Array(input[(index + 1)...]))
    }

    static func text(_ bytes: some Collection<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    if ProcessInfo.processInfo.environment["NEARBY_FUZZ_LIST"] != nil {
        for name in Fuzz.targets.map(\.name).sorted() { print(name) }
        exit(0)
    }
    guard Fuzz.selected != nil else {
        let name = ProcessInfo.processInfo.environment["NEARBY_FUZZ_TARGET"] ?? "(unset)"
        FileHandle.standardError.write(Data("nearby-fuzz: NEARBY_FUZZ_TARGET \(name) is not a target (NEARBY_FUZZ_LIST=1 lists them)\n".utf8))
        exit(2)
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    Fuzz.selected?.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// main(): SwiftPM links an executable's entry point as `nearby_fuzz_main` (so that tests could link
/// the module), which keeps libFuzzer's own main() out; this one hands over to libFuzzer's driver.
@_cdecl("nearby_fuzz_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) }
}
