/// The edits an output's processor chain takes, checked the same way for every output that has
/// one (the video data output, the virtual camera output).
extension [NamedProcessor] {
    /// Inserts `processor` under `name` at `position`. Throws
    /// ``CaptureError/Code/invalidArgument`` for an empty or taken name or an unknown anchor.
    package mutating func add(_ processor: any FrameProcessor, named name: String, at position: ProcessorPosition)
        throws(CaptureError)
    {
        guard !name.isEmpty else {
            throw CaptureError(.invalidArgument, "a processor needs a non-empty name")
        }
        guard !contains(where: { $0.name == name }) else {
            throw CaptureError(
                .invalidArgument, "a processor named '\(name)' is already in the chain: remove or replace it")
        }
        let entry = NamedProcessor(name: name, processor: processor)
        switch position {
        case .first: insert(entry, at: 0)
        case .last: append(entry)
        case .before(let anchor): insert(entry, at: try index(named: anchor))
        case .after(let anchor): insert(entry, at: try index(named: anchor) + 1)
        }
    }

    /// Removes the processor named `name`; ``CaptureError/Code/invalidArgument`` when there is none.
    package mutating func remove(named name: String) throws(CaptureError) {
        remove(at: try index(named: name))
    }

    /// Puts `processor` in the place of the one named `name`, keeping the name.
    package mutating func replace(named name: String, with processor: any FrameProcessor) throws(CaptureError) {
        self[try index(named: name)] = NamedProcessor(name: name, processor: processor)
    }

    /// The position of the processor named `name`; ``CaptureError/Code/invalidArgument`` naming
    /// the chain's processors when there is none.
    package func index(named name: String) throws(CaptureError) -> Int {
        guard let index = firstIndex(where: { $0.name == name }) else {
            let names = map(\.name).joined(separator: ", ")
            throw CaptureError(
                .invalidArgument,
                "no processor named '\(name)' in the chain (it has: \(names.isEmpty ? "none" : names))")
        }
        return index
    }
}
