import NearbyBase

/// The pages a browser sees: small, self-contained HTML (styles and the upload page's script
/// inline, no font, image or script from anywhere — the phone may have no internet), readable on a
/// phone (viewport, one column, tap targets of 48 px and more), with the device's name on top.
/// Everything shown that is not ours (file names, the device's name) goes through `html(_:)`.
enum WebPages {
    /// The headers every page goes with: nothing may be loaded from elsewhere, nothing framed; inline
    /// script only on a page that has some (the upload page's progress bar), none on the others.
    package static func securityHeaders(script: Bool) -> [(String, String)] {
        let scripts = script ? "script-src 'unsafe-inline'; connect-src 'self'; " : ""
        return [("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; \(scripts)form-action 'self'; img-src data:; frame-ancestors 'none'; base-uri 'none'")] + otherHeaders
    }

    static let otherHeaders: [(String, String)] = [
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", "no-store"),
    ]

    package struct Item: Sendable {
        package var name: String
        package var size: UInt64
        /// Files inside, for a directory sent as a zip; nil for a file.
        package var files: Int?
        package init(name: String, size: UInt64, files: Int?) {
            self.name = name
            self.size = size
            self.files = files
        }
    }

    /// `send-file --web`: each item with its size and a download link.
    package static func share(device: String, items: [Item]) -> String {
        var rows = ""
        for (index, item) in items.enumerated() {
            let shown = item.files == nil ? item.name : item.name + ".zip"
            let detail = item.files.map { "\(size(item.size)) · \($0) file\($0 == 1 ? "" : "s") in one .zip" } ?? size(item.size)
            rows += """
                <li><a class="button" href="\(index)/\(percent(shown))" download="\(html(shown))">
                <span class="name">\(html(shown))</span><span class="size">\(html(detail))</span></a></li>

                """
        }
        return page(title: "Files from \(device)", body: """
            <h1>Files from <b>\(html(device))</b></h1>
            <p class="hint">Tap a file to download it. An interrupted download resumes.</p>
            <ul>
            \(rows)</ul>
            """)
    }

    /// `accept --web`: several files at once, progress shown by a small script; the form alone works too.
    package static func upload(device: String, message: String? = nil) -> String {
        let note = message.map { "<p class=\"done\" id=\"result\">\(html($0))</p>" } ?? "<p id=\"result\"></p>"
        return page(title: "Send to \(device)", body: """
            <h1>Send files to <b>\(html(device))</b></h1>
            <form id="form" method="post" action="upload" enctype="multipart/form-data">
            <label class="button pick">Choose files<input id="files" type="file" name="file" multiple></label>
            <p id="chosen" class="hint"></p>
            <button class="button send" type="submit">Send</button>
            </form>
            <progress id="bar" max="1" value="0" hidden></progress>
            \(note)
            <script>
            const form = document.getElementById('form'), input = document.getElementById('files');
            const bar = document.getElementById('bar'), result = document.getElementById('result');
            input.addEventListener('change', () => {
              const n = input.files.length;
              document.getElementById('chosen').textContent = n === 0 ? 'No file chosen.' : n === 1 ? input.files[0].name : n + ' files chosen';
            });
            form.addEventListener('submit', (event) => {
              event.preventDefault();
              if (input.files.length === 0) { result.textContent = 'Choose a file first.'; return; }
              const request = new XMLHttpRequest();
              request.open('POST', 'upload');
              request.setRequestHeader('Accept', 'text/plain');
              bar.hidden = false; bar.value = 0;
              request.upload.onprogress = (e) => { if (e.lengthComputable) { bar.value = e.loaded / e.total;
                result.textContent = Math.floor(100 * e.loaded / e.total) + ' %'; } };
              request.onload = () => { bar.value = 1; result.textContent = request.responseText; result.className = request.status === 200 ? 'done' : 'failed'; };
              request.onerror = () => { result.textContent = 'The connection was lost.'; result.className = 'failed'; };
              request.send(new FormData(form));
            });
            </script>
            """)
    }

    /// The 404 of every wrong path: the same bytes whatever was asked.
    package static let wrongLink = page(
        title: "Link not found",
        body: "<h1>This link is wrong or has expired</h1>\n<p class=\"hint\">Check it against the one you were given, "
            + "or ask for a new one: each link works only while the sender's nearby runs.</p>")

    static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(html(title))</title>
        <style>
        body{font:18px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:16px;background:#f6f7f9;color:#111}
        h1{font-size:22px;font-weight:600;margin:8px 0 16px}
        ul{list-style:none;padding:0;margin:0}
        li{margin:0 0 12px}
        .button{display:flex;flex-direction:column;justify-content:center;box-sizing:border-box;width:100%;min-height:56px;
        padding:12px 16px;border-radius:12px;border:0;background:#1a73e8;color:#fff;text-decoration:none;font-size:18px;text-align:left}
        .name{font-weight:600;overflow-wrap:anywhere}.size{font-size:15px;opacity:.85}
        .pick{background:#fff;color:#1a73e8;border:2px solid #1a73e8;text-align:center;align-items:center;cursor:pointer}
        .pick input{font-size:16px;margin-top:8px;max-width:100%}
        .send{margin-top:8px;text-align:center;align-items:center}
        .hint{color:#555;font-size:15px}
        progress{width:100%;height:24px;margin-top:16px}
        .done{color:#0b7a28;font-weight:600}.failed{color:#b3261e;font-weight:600}
        @media (prefers-color-scheme: dark){body{background:#111;color:#eee}.hint{color:#aaa}.pick{background:#111}}
        </style></head>
        <body>
        \(body)
        </body></html>

        """
    }

    /// Text for HTML, in an element or a quoted attribute; control, bidi and other invisible
    /// characters shown as escapes (`\u{202e}`), as on a terminal (`TerminalText`), so a name reads
    /// as what it is.
    package static func html(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in TerminalText.escaped(text).unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += "&#xFFFD;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A path segment: unreserved bytes as themselves, every other byte %XX.
    static func percent(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default: out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// 1234567 → "1.2 MB".
    package static func size(_ bytes: UInt64) -> String {
        let units = ["bytes", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        if unit == 0 { return "\(bytes) byte\(bytes == 1 ? "" : "s")" }
        return (value < 10 ? String(Double(Int(value * 10)) / 10) : String(Int(value))) + " " + units[unit]
    }
}
