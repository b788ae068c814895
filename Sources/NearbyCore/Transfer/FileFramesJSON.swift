/// The file protocol's frame bodies written by hand, the fields in JSONEncoder's order, absent
/// optionals left out as it does: a folder of small files sends several per file each way, and
/// JSONEncoder was a noticeable share of a small file's CPU. Readers decode them with JSONDecoder
/// as any other (`WireMessage`); `FileFramesJSONTests` checks that both give the same value.
protocol DirectFrameJSON {
    var json: String { get }
}

extension FrameBody.Open: DirectFrameJSON {
    var json: String {
        #"{"kind":"# + EventEncoder.quoted(kind.description) + #","path":"# + EventEncoder.quoted(path) + #","size":"# + String(size)
            + #","key":"# + EventEncoder.quoted(key) + "}"
    }
}

extension FrameBody.OpenReply: DirectFrameJSON {
    var json: String {
        var line = #"{"accept":"# + (accept ? "true" : "false") + #","offset":"# + String(offset)
        if let prefixSHA256 { line += #","prefixSHA256":"# + EventEncoder.quoted(prefixSHA256) }
        if let reason { line += #","reason":"# + EventEncoder.quoted(reason) }
        if let code { line += #","code":"# + EventEncoder.quoted(code.description) }
        return line + "}"
    }
}

extension FrameBody.Start: DirectFrameJSON {
    var json: String { #"{"offset":"# + String(offset) + "}" }
}

extension FrameBody.Close: DirectFrameJSON {
    var json: String {
        var line = #"{"sha256":"# + EventEncoder.quoted(sha256) + #","bytes":"# + String(bytes)
        if let alreadyThere { line += #","alreadyThere":"# + (alreadyThere ? "true" : "false") }
        if let savedAs { line += #","savedAs":"# + EventEncoder.quoted(savedAs) }
        return line + "}"
    }
}
