import Foundation

/// The files a `send-file` names: files as themselves, directories recursively with their relative
/// paths kept (under the directory's own name). Symbolic links are followed for the paths given,
/// skipped inside directories; anything that is not a regular file is skipped.
public struct OutgoingFile: Sendable, Equatable, Codable {
    public var source: String
    public var relative: String
    public var size: UInt64
    public var modified: Double
}

public enum FileList {
    public static func collect(_ paths: [String], relativeTo base: String = FileManager.default.currentDirectoryPath) throws(NearbyError) -> [OutgoingFile] {
        var files: [OutgoingFile] = []
        let manager = FileManager.default
        for given in paths {
            let path = given.hasPrefix("/") ? given : base + "/" + given
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw .ioFailure(path: given, reason: "no such file or directory")
            }
            guard manager.isReadableFile(atPath: path) else { throw .ioFailure(path: given, reason: "not readable") }
            let name = URL(fileURLWithPath: path).standardizedFileURL.lastPathComponent
            if !isDirectory.boolValue {
                files.append(try describe(path, relative: name))
                continue
            }
            guard let walker = manager.enumerator(atPath: path) else { throw .ioFailure(path: given, reason: "cannot list") }
            var inside: [String] = []
            while let entry = walker.nextObject() as? String { inside.append(entry) }
            for entry in inside.sorted() {
                let full = path + "/" + entry
                guard let attributes = try? manager.attributesOfItem(atPath: full),
                      attributes[.type] as? FileAttributeType == .typeRegular
                else { continue }
                files.append(try describe(full, relative: name + "/" + entry))
            }
        }
        return files
    }

    static func describe(_ path: String, relative: String) throws(NearbyError) -> OutgoingFile {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            throw .ioFailure(path: path, reason: "cannot read its attributes")
        }
        let size = (attributes[.size] as? NSNumber)?.uint64Value ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        return OutgoingFile(source: path, relative: relative, size: size, modified: modified)
    }
}
