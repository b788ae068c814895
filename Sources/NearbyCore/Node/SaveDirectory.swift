/// Where a node may put files: only where it was told (`--save-dir`, or this variable).
public enum SaveDirectory {
    public static let environmentVariable = "NEARBY_SAVE_DIR"
    public static var howToEnable: String {
        "start the node with \(Spelling.option(.saveDirectory, "DIR")) (advertise, accept) or set \(environmentVariable)"
    }
}
