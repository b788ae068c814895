import Foundation

/// A file's media type by its name's extension, from the system's database as the official app
/// looks one up (`lookupMimeType(fileName)`, the Dart `mime` package's table): Debian's
/// `media-types` package (`/etc/mime.types`, read once, at most 1 MiB of it), with a small
/// built-in table for a system without it. What matters to a phone: it saves only `image/*` and
/// `video/*` into its gallery, and shows an icon by type (`text/*`: a text file's).
package struct LocalSendMediaTypes: Sendable {
    private let byExtension: [String: String]

    /// The database nearby reads, and the bound on it.
    static let systemPath = "/etc/mime.types"
    static let maxBytes = 1 << 20

    /// The system's table over the built-in one (read once, on first use).
    package static let shared = LocalSendMediaTypes(
        text: (try? Data(contentsOf: URL(fileURLWithPath: systemPath), options: .mappedIfSafe))
            .flatMap { $0.count <= maxBytes ? String(decoding: $0, as: UTF8.self) : nil })

    /// `text`: the contents of a `mime.types` file (`type ext ext …` a line, `#` comments); nil or
    /// empty: the built-in table alone.
    package init(text: String?) {
        var table = Self.builtIn
        var fromFile: Set<String> = []
        for line in (text ?? "").split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let type = words.first, !type.hasPrefix("#"), type.contains("/"), type.utf8.count <= 128 else { continue }
            for word in words.dropFirst() where word.utf8.count <= 32 {
                // The first line that names an extension wins, as in the file's own order.
                let ext = word.lowercased()
                if fromFile.insert(ext).inserted { table[ext] = String(type) }
            }
        }
        byExtension = table
    }

    /// The type of `name` (its last extension, any case); `application/octet-stream` when unknown.
    /// Text files are `text/*` as the app sends them (`notes.txt` is `text/plain`); what keeps a
    /// lone one a file is the sender's (`LocalSendSender.fileOffer`).
    package func type(of name: String) -> String {
        let last = name.split(separator: "/").last.map(String.init) ?? name
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return "application/octet-stream" }
        return byExtension[last[last.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }

    /// For a system without `/etc/mime.types`: the types a phone's gallery and icons care about.
    static let builtIn: [String: String] = [
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "jpe": "image/jpeg", "png": "image/png", "gif": "image/gif",
        "webp": "image/webp", "bmp": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff", "heic": "image/heic",
        "heif": "image/heif", "avif": "image/avif", "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon",
        "dng": "image/x-adobe-dng", "jxl": "image/jxl",
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "mkv": "video/x-matroska", "webm": "video/webm",
        "avi": "video/x-msvideo", "3gp": "video/3gpp", "3g2": "video/3gpp2", "mpg": "video/mpeg", "mpeg": "video/mpeg",
        "ts": "video/mp2t", "wmv": "video/x-ms-wmv", "flv": "video/x-flv", "ogv": "video/ogg",
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "ogg": "audio/ogg", "oga": "audio/ogg",
        "opus": "audio/ogg", "flac": "audio/flac", "wav": "audio/x-wav", "amr": "audio/amr", "mid": "audio/midi",
        "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar",
        "7z": "application/x-7z-compressed", "rar": "application/vnd.rar", "apk": "application/vnd.android.package-archive",
        "epub": "application/epub+zip", "json": "application/json", "doc": "application/msword",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "odp": "application/vnd.oasis.opendocument.presentation",
        "txt": "text/plain", "text": "text/plain", "md": "text/markdown", "markdown": "text/markdown", "csv": "text/csv",
        "html": "text/html", "htm": "text/html", "css": "text/css",
    ]
}
