import CQRencode

/// The QR code of a page's address, made by libqrencode (medium error correction), drawn for a
/// terminal with half blocks: two rows of modules per line, dark on light with the 4-module quiet
/// zone a phone's camera needs, so it reads on dark and light terminal themes alike.
package struct QRCode: Sendable, Equatable {
    package let width: Int
    /// Row by row, true for a dark module.
    package let modules: [Bool]

    /// Nil when libqrencode cannot encode `text` (too long for a QR code).
    package init?(_ text: String) {
        guard let code = text.withCString({ QRcode_encodeString($0, 0, QR_ECLEVEL_M, QR_MODE_8, 1) }) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        guard width > 0, let data = code.pointee.data else { return nil }
        self.width = width
        modules = (0..<(width * width)).map { data[$0] & 1 == 1 }
    }

    package func isDark(_ row: Int, _ column: Int) -> Bool {
        guard row >= 0, row < width, column >= 0, column < width else { return false }
        return modules[row * width + column]
    }

    /// The lines to print: light is a full block (the terminal's foreground), dark a space, so the
    /// code shows as dark modules on a light square whatever the theme.
    package func terminalLines(quietZone: Int = 4) -> [String] {
        var lines: [String] = []
        var row = -quietZone
        while row < width + quietZone {
            var line = ""
            for column in -quietZone..<(width + quietZone) {
                switch (isDark(row, column), isDark(row + 1, column)) {
                case (false, false): line += "█"
                case (false, true): line += "▀"
                case (true, false): line += "▄"
                case (true, true): line += " "
                }
            }
            lines.append(line)
            row += 2
        }
        return lines
    }
}
