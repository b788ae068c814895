import NearbyBase

extension Events {
    /// `send-file --web`, `accept --web`, `advertise --web`: where a browser finds the page. `url` is
    /// the first of `urls`, one per address of this host that a phone on the LAN can reach.
    package struct WebServing: EventBody {
        package static let event = "web-serving"
        package var url: String
        package var urls: [String]
        package var port: Int
        /// "send" (files to download) or "receive" (an upload page).
        package var mode: String
        /// Items a `send` page offers (a directory counts once: it goes as one .zip).
        package var items: Int?
        /// Where uploads land (`receive`).
        package var saveDir: String?

        enum CodingKeys: String, CodingKey {
            case url, urls, port, mode, items
            case saveDir = "save_dir"
        }

        package init(urls: [String], port: Int, mode: String, items: Int? = nil, saveDir: String? = nil) {
            url = urls.first ?? ""
            self.urls = urls
            self.port = port
            self.mode = mode
            self.items = items
            self.saveDir = saveDir
        }
    }

    /// A browser's download ended: whole (`complete`) or not, with the range it asked for.
    package struct WebDownload: EventBody {
        package static let event = "web-download"
        package var address: String
        /// The browser's User-Agent, as text (cut to 200 characters; escaped like every string).
        package var userAgent: String
        package var path: String
        /// Bytes sent in this response, and the bytes it was to send.
        package var bytes: UInt64
        package var total: UInt64
        /// Where the response started in the file (non-zero for a resumed download, `Range`).
        package var offset: UInt64
        package var complete: Bool
        /// Every item of the share has now been downloaded whole at least once.
        package var allDone: Bool

        enum CodingKeys: String, CodingKey {
            case address, path, bytes, total, offset, complete
            case userAgent = "user_agent"
            case allDone = "all_done"
        }

        package init(address: String, userAgent: String, path: String, bytes: UInt64, total: UInt64, offset: UInt64, complete: Bool, allDone: Bool) {
            self.address = address
            self.userAgent = String(userAgent.unicodeScalars.prefix(200).map(Character.init))
            self.path = path
            self.bytes = bytes
            self.total = total
            self.offset = offset
            self.complete = complete
            self.allDone = allDone
        }
    }

    /// The kinds of this module, for readers of event lines (`HumanRenderer`).
    package static let webKinds: [any EventBody.Type] = [WebServing.self, WebDownload.self]
}

extension PeerRef {
    /// A browser at `address`: it has no identity, so its address stands for one.
    static func browser(_ address: String) -> PeerRef { PeerRef(id: "web-" + address, name: address) }
}
