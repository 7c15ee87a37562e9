extension CaptureVideoDataOutput {
    /// The processor chain, in the order frames pass through it (before the delegate).
    public var processors: [NamedProcessor] { core.processors }

    /// The processor added under `name`, if any.
    public func processor(named name: String) -> (any FrameProcessor)? { core.processor(named: name) }

    /// Adds `processor` under `name` at `position`. Allowed while running: the chain is
    /// renegotiated and takes effect between frames. Throws ``CaptureError/Code/invalidArgument``
    /// for an empty or taken name or an unknown anchor, and the processor's own error when it
    /// refuses the format it would receive (the chain is then unchanged).
    public func addProcessor(
        _ processor: any FrameProcessor, named name: String, at position: ProcessorPosition = .last
    ) throws(CaptureError) {
        try core.addProcessor(processor, named: name, at: position)
    }

    /// Removes the processor named `name`. Throws ``CaptureError/Code/invalidArgument`` when there
    /// is none.
    public func removeProcessor(named name: String) throws(CaptureError) { try core.removeProcessor(named: name) }

    /// Puts `processor` in the place of the one named `name`, keeping the name.
    public func replaceProcessor(named name: String, with processor: any FrameProcessor) throws(CaptureError) {
        try core.replaceProcessor(named: name, with: processor)
    }

    /// Removes every processor.
    public func removeAllProcessors() { core.removeAllProcessors() }
}
