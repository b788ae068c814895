import NearbyBase
/// Where a node may put files: only where it was told (`--save-dir`, or this variable).
package enum SaveDirectory {
    package static let environmentVariable = "NEARBY_SAVE_DIR"
    package static var howToEnable: String {
        "start the node with \(Spelling.option(.saveDirectory, "DIR")) (advertise, accept) or set \(environmentVariable)"
    }
}
