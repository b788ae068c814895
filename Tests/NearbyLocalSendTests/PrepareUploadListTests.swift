import Foundation
import Testing
@testable import NearbyLocalSend

/// The prepare-upload list read as it arrives (`PrepareUploadList`): the same entries whatever the
/// chunks, and each bound refused at the entry that crosses it.
@Suite struct PrepareUploadListTests {
    /// A body as the official app writes one for a folder: UUID keys, paths under the folder's
    /// name, `sha256` and `preview` null, `metadata`, in pretty-printed JSON with escapes.
    static func officialBody(files: Int, pretty: Bool = true) -> [UInt8] {
        var entries: [String] = []
        for index in 0..<files {
            let id = String(format: "%08x-0000-4000-8000-%012x", index, index)
            let name = index % 7 == 0 ? #"trip/día \"\#(index)\"\\x.jpg"# : "trip/sub\(index % 5)/IMG_\(index).jpg"
            entries.append(#""\#(id)": {"id": "\#(id)", "fileName": "\#(name)", "size": \#(index * 3), "fileType": "image/jpeg", "#
                + #""sha256": null, "preview": null, "metadata": {"modified": "2024-01-02T03:04:05.000Z", "accessed": null}}"#)
        }
        let info = #"{"alias": "Pixel 8", "version": "2.1", "deviceModel": "Pixel", "deviceType": "mobile", "fingerprint": "ABC", "port": 53317, "protocol": "https", "download": false}"#
        let separator = pretty ? ",\n    " : ","
        return Array("{\n  \"info\": \(info),\n  \"files\": {\n    \(entries.joined(separator: separator))\n  }\n}\n".utf8)
    }

    /// The entries a whole-body parse finds, by key.
    static func expected(_ body: [UInt8]) -> [String: (String, UInt64)] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let files = object["files"] as? [String: [String: Any]] else { return [:] }
        return files.mapValues { ($0["fileName"] as? String ?? "", ($0["size"] as? NSNumber)?.uint64Value ?? 0) }
    }

    static func read(_ body: [UInt8], cuts: [Int], limits: PrepareUploadList.Limits = .init()) throws(PrepareUploadList.Failure) -> ([PrepareUploadList.Entry], [UInt8]) {
        var list = PrepareUploadList(limits: limits)
        var entries: [PrepareUploadList.Entry] = []
        var start = 0
        for cut in cuts.sorted() + [body.count] where cut >= start {
            entries += try list.feed(body[start..<cut])
            start = cut
        }
        return (entries, try list.finish())
    }

    @Test func anOfficialFolderReadsTheSameInAnyChunks() throws {
        let body = Self.officialBody(files: 60)
        let want = Self.expected(body)
        #expect(want.count == 60)
        var random = SystemRandomNumberGenerator()
        for round in 0..<200 {
            // Byte by byte once, then random splits (a few to a hundred).
            let cuts = round == 0 ? Array(0..<body.count) : (0..<Int.random(in: 1...100, using: &random)).map { _ in Int.random(in: 0...body.count, using: &random) }
            let (entries, info) = try Self.read(body, cuts: cuts)
            // A failure names its cuts, to be replayed.
            #expect(entries.count == 60, "cuts \(cuts.sorted())")
            for entry in entries {
                #expect(want[entry.key]?.0 == entry.file.fileName, "cuts \(cuts.sorted()): \(entry.key)")
                #expect(want[entry.key]?.1 == entry.file.size)
            }
            #expect(DeviceMessage.decode(info, limit: 1 << 16, needsFingerprint: false)?.alias == "Pixel 8")
        }
    }

    @Test func fiveThousandFilesFitAndKeepTheirPaths() throws {
        let body = Self.officialBody(files: 5000, pretty: false)
        let (entries, _) = try Self.read(body, cuts: stride(from: 0, to: body.count, by: 8192).map { $0 })
        #expect(entries.count == 5000)
        #expect(entries[1].file.fileName == "trip/sub1/IMG_1.jpg")
        #expect(entries[7].file.fileName == #"trip/día "7"\x.jpg"#)
    }

    @Test func oneFileMoreThanTheCountIsRefusedAtThatEntry() {
        var limits = PrepareUploadList.Limits()
        limits.maxFiles = 100
        let body = Self.officialBody(files: 1000, pretty: false)
        var list = PrepareUploadList(limits: limits)
        var read = 0
        var refused: PrepareUploadList.Failure?
        for start in stride(from: 0, to: body.count, by: 512) {
            do { read += try list.feed(body[start..<min(body.count, start + 512)]).count } catch {
                refused = error
                break
            }
        }
        #expect(refused == .tooManyFiles(limit: 100))
        #expect(refused?.status == 413)
        #expect(read == 100)
        // Refused early: about a tenth of the body was read.
        #expect(list.bytes < body.count / 5)
    }

    @Test func eachBoundIsRefusedInWords() {
        func failure(_ text: String, _ change: (inout PrepareUploadList.Limits) -> Void = { _ in }) -> PrepareUploadList.Failure? {
            var limits = PrepareUploadList.Limits()
            change(&limits)
            do {
                _ = try Self.read(Array(text.utf8), cuts: [], limits: limits)
                return nil
            } catch { return error }
        }
        let info = #""info":{"alias":"a"}"#
        let long = String(repeating: "x", count: 20_000)
        #expect(failure(#"{\#(info),"files":{"f":{"id":"f","fileName":"\#(long)","size":1}}}"#)?.status == 413)
        #expect(failure(#"{\#(info),"pad":"\#(String(repeating: "p", count: 300_000))","files":{}}"#)?.status == 413)
        #expect(failure(#"{\#(info),"files":{"f":{"id":"f","fileName":"a","size":1}}}"#) { $0.bodyBytes = 40 }?.sentence.contains("file list of at most 40 bytes") == true)
        #expect(failure(#"{\#(info),"files":{"f":{"id":"f","fileName":"a","size":1,"x":\#(String(repeating: "[", count: 20))}}}"#)?.status == 400)
        #expect(failure(#"{\#(info),"files":[[[]]]}"#)?.status == 400)
        #expect(failure(#"{\#(info),"files":{"f":{"id":"f","fileName":"a","size":1},"f":{"id":"f","fileName":"b","size":1}}}"#)?.status == 400)
        #expect(failure(#"{\#(info),"files":{"f":{"id":"f","fileName":"a","size":-1}}}"#)?.status == 400)
        #expect(failure(#"{\#(info),"files":{"f":{"id":"f","fileName":"a","size":1}}"#)?.sentence.contains("ended") == true)
        #expect(failure(#"{\#(info),"files":{}}"#)?.status == 400)
        #expect(failure(#"{"files":{"f":{"id":"f","fileName":"a","size":1}}}"#)?.sentence.contains("no info") == true)
        #expect(failure(#"{\#(info),"files":{"f":{"id":"f","fileName":"a","size":1}}} x"#)?.status == 400)
        #expect(failure(#"[\#(info)]"#)?.status == 400)
        // Scalars, strings with braces, and info after files are read as JSON is.
        #expect(failure(#"{"n":12,"s":"}{\"","files":{"f":{"id":"f","fileName":"a}","size":1}},"t":true,\#(info)}"#) == nil)
    }
}
