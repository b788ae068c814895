/// The file events written by hand (`DirectJSON`): a folder of small files brings several per file
/// on each side, and JSONEncoder was a tenth of a small file's CPU. The same fields, keys sorted,
/// numbers as JSONEncoder writes them (`EventEncoderTests` compares the two).
extension EventEncoder {
    /// A number as JSONEncoder writes a Double: its shortest form, without a trailing `.0`.
    static func number(_ value: Double) -> String {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }
}

extension Events.FileStarted: DirectJSON {
    package func writeFields(into line: inout String) {
        line += #","bytes":"# + String(bytes) + #","direction":"# + EventEncoder.quoted(direction)
        line += #","path":"# + EventEncoder.quoted(path) + #","peer":"# + peer.json
        line += #","skipped":"# + String(skipped) + #","transfer":"# + EventEncoder.quoted(transfer)
    }
}

extension Events.Progress: DirectJSON {
    package func writeFields(into line: inout String) {
        if let allBytes { line += #","all_bytes":"# + String(allBytes) }
        if let allTotal { line += #","all_total":"# + String(allTotal) }
        line += #","bytes":"# + String(bytes) + #","direction":"# + EventEncoder.quoted(direction)
        if let file { line += #","file":"# + String(file) }
        if let files { line += #","files":"# + String(files) }
        line += #","path":"# + EventEncoder.quoted(path) + #","peer":"# + peer.json
        line += #","rate":"# + EventEncoder.number(rate) + #","total":"# + String(total)
        line += #","transfer":"# + EventEncoder.quoted(transfer)
    }
}

extension Events.FileDone: DirectJSON {
    package func writeFields(into line: inout String) {
        if let alreadyThere { line += #","already_there":"# + (alreadyThere ? "true" : "false") }
        line += #","bytes":"# + String(bytes) + #","path":"# + EventEncoder.quoted(path) + #","peer":"# + peer.json
        if let savedAs { line += #","saved_as":"# + EventEncoder.quoted(savedAs) }
        line += #","seconds":"# + EventEncoder.number(seconds) + #","sha256":"# + EventEncoder.quoted(sha256)
        line += #","skipped":"# + String(skipped)
        if let source { line += #","source":"# + EventEncoder.quoted(source) }
        line += #","transfer":"# + EventEncoder.quoted(transfer)
    }
}
