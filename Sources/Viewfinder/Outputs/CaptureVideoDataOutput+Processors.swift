extension CaptureVideoDataOutput {
    /// The processor chain, in the order frames pass through it (before the delegate).
    public var processors: [NamedProcessor] { core.currentSettings.processors }

    /// The processor added under `name`, if any.
    public func processor(named name: String) -> (any FrameProcessor)? {
        processors.first { $0.name == name }?.processor
    }

    /// Adds `processor` under `name` at `position`. Allowed while running: the chain is
    /// renegotiated and takes effect between frames. Throws ``CaptureError/Code/invalidArgument``
    /// for an empty or taken name or an unknown anchor, and the processor's own error when it
    /// refuses the format it would receive (the chain is then unchanged).
    public func addProcessor(
        _ processor: any FrameProcessor, named name: String, at position: ProcessorPosition = .last
    ) throws(CaptureError) {
        try editChain { (chain) throws(CaptureError) in
            guard !name.isEmpty else {
                throw CaptureError(.invalidArgument, "a processor needs a non-empty name")
            }
            guard !chain.contains(where: { $0.name == name }) else {
                throw CaptureError(
                    .invalidArgument, "a processor named '\(name)' is already in the chain: remove or replace it")
            }
            let entry = NamedProcessor(name: name, processor: processor)
            switch position {
            case .first: chain.insert(entry, at: 0)
            case .last: chain.append(entry)
            case .before(let anchor): chain.insert(entry, at: try Self.index(of: anchor, in: chain))
            case .after(let anchor): chain.insert(entry, at: try Self.index(of: anchor, in: chain) + 1)
            }
        }
    }

    /// Removes the processor named `name`. Throws ``CaptureError/Code/invalidArgument`` when there
    /// is none.
    public func removeProcessor(named name: String) throws(CaptureError) {
        try editChain { (chain) throws(CaptureError) in
            chain.remove(at: try Self.index(of: name, in: chain))
        }
    }

    /// Puts `processor` in the place of the one named `name`, keeping the name.
    public func replaceProcessor(named name: String, with processor: any FrameProcessor) throws(CaptureError) {
        try editChain { (chain) throws(CaptureError) in
            chain[try Self.index(of: name, in: chain)] = NamedProcessor(name: name, processor: processor)
        }
    }

    /// Removes every processor.
    public func removeAllProcessors() {
        try? editChain { $0.removeAll() }
    }

    private static func index(of name: String, in chain: [NamedProcessor]) throws(CaptureError) -> Int {
        guard let index = chain.firstIndex(where: { $0.name == name }) else {
            let names = chain.map(\.name).joined(separator: ", ")
            throw CaptureError(
                .invalidArgument,
                "no processor named '\(name)' in the chain (it has: \(names.isEmpty ? "none" : names))")
        }
        return index
    }

    /// Renegotiates the chain as it is (after a connection's rotation or mirroring changed).
    func renegotiateChain() throws(CaptureError) {
        try editChain { _ in }
    }

    private func editChain(_ edit: (inout [NamedProcessor]) throws(CaptureError) -> Void) throws(CaptureError) {
        try core.applyChange { (settings, _) throws(CaptureError) in try edit(&settings.processors) }
    }
}
