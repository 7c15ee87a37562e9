extension CaptureSession {
    /// Adds `input` without connecting it to any output (`AVCaptureSession`'s
    /// `addInputWithNoConnections(_:)`): connect its ports by hand with ``addConnection(_:)``.
    /// Traps when ``canAddInput(_:)`` is false, as AVFoundation raises; ``tryAddInputWithNoConnections(_:)``
    /// throws instead.
    public func addInputWithNoConnections(_ input: CaptureInput) {
        do throws(CaptureError) {
            try tryAddInputWithNoConnections(input)
        } catch {
            preconditionFailure("addInputWithNoConnections(_:): \(error.message)")
        }
    }

    /// Adds `input` like ``addInputWithNoConnections(_:)``, throwing
    /// ``CaptureError/Code/cannotAddInput`` when ``canAddInput(_:)`` is false.
    public func tryAddInputWithNoConnections(_ input: CaptureInput) throws(CaptureError) {
        try addUnconnected(input) { () throws(CaptureError) in try tryAddInput(input) }
    }

    /// Adds `output` without connecting it to any input (`AVCaptureSession`'s
    /// `addOutputWithNoConnections(_:)`): connect it by hand with ``addConnection(_:)``. Traps
    /// when ``canAddOutput(_:)`` is false; ``tryAddOutputWithNoConnections(_:)`` throws instead.
    public func addOutputWithNoConnections(_ output: CaptureOutput) {
        do throws(CaptureError) {
            try tryAddOutputWithNoConnections(output)
        } catch {
            preconditionFailure("addOutputWithNoConnections(_:): \(error.message)")
        }
    }

    /// Adds `output` like ``addOutputWithNoConnections(_:)``, throwing
    /// ``CaptureError/Code/cannotAddOutput`` when ``canAddOutput(_:)`` is false.
    public func tryAddOutputWithNoConnections(_ output: CaptureOutput) throws(CaptureError) {
        try addUnconnected(output) { () throws(CaptureError) in try tryAddOutput(output) }
    }

    /// Marks `object` as connected by hand only, then adds it with `add`, in one commit: it is
    /// never connected automatically, even for a moment.
    private func addUnconnected(_ object: AnyObject, _ add: () throws(CaptureError) -> Void) throws(CaptureError) {
        beginConfiguration()
        defer { commitConfiguration() }
        try? mutateChecked { graph in graph.unconnected.insert(ObjectIdentifier(object)) }
        do {
            try add()
        } catch {
            try? mutateChecked { graph in graph.unconnected.remove(ObjectIdentifier(object)) }
            throw error
        }
    }

    /// Whether `connection` can be added: one input port of an input of this session, an output
    /// of this session that takes the port's media, and no other connection of that output for
    /// that media (an output takes one camera).
    public func canAddConnection(_ connection: CaptureConnection) -> Bool {
        Self.connectionRefusal(connection, in: Graph(inputs: inputs, outputs: outputs, connections: connections)) == nil
    }

    private static func connectionRefusal(_ connection: CaptureConnection, in graph: Graph) -> CaptureError? {
        let (inputs, outputs, connections) = (graph.inputs, graph.outputs, graph.connections)
        guard connection.inputPorts.count == 1, let port = connection.inputPorts.first else {
            return CaptureError(
                .invalidArgument,
                "a connection carries one media type: make it from exactly one input port (it has \(connection.inputPorts.count))"
            )
        }
        guard let input = port.input, inputs.contains(where: { $0 === input }) else {
            return CaptureError(.invalidArgument, "the connection's input is not in this session: add it first")
        }
        guard let output = connection.output, outputs.contains(where: { $0 === output }) else {
            return CaptureError(.invalidArgument, "the connection's output is not in this session: add it first")
        }
        guard output.acceptedMediaTypes.contains(port.mediaType) else {
            return CaptureError(.invalidArgument, "the output does not take \(port.mediaType) from this port")
        }
        if connections.contains(where: { $0 === connection }) {
            return CaptureError(.invalidArgument, "this connection is already in the session")
        }
        if connections.contains(where: { $0.output === output && $0.mediaType == port.mediaType }) {
            return CaptureError(
                .invalidArgument,
                "the output already has a \(port.mediaType) connection: give each camera an output of its own")
        }
        return nil
    }

    /// Adds a connection made with ``CaptureConnection/init(inputPorts:output:)``. Traps when
    /// ``canAddConnection(_:)`` is false, as AVFoundation raises; ``tryAddConnection(_:)`` throws.
    public func addConnection(_ connection: CaptureConnection) {
        do throws(CaptureError) {
            try tryAddConnection(connection)
        } catch {
            preconditionFailure(
                "addConnection(_:): \(error.message) (check canAddConnection(_:) first, or call tryAddConnection(_:))")
        }
    }

    /// Adds `connection` like ``addConnection(_:)``, throwing ``CaptureError/Code/invalidArgument``
    /// with the reason when ``canAddConnection(_:)`` is false.
    public func tryAddConnection(_ connection: CaptureConnection) throws(CaptureError) {
        try mutateChecked { (graph) throws(CaptureError) in
            if let refusal = Self.connectionRefusal(connection, in: graph) { throw refusal }
            graph.manualConnections.append(connection)
            Self.connect(&graph)
        }
    }

    /// Removes a connection added with ``addConnection(_:)``.
    public func removeConnection(_ connection: CaptureConnection) {
        try? mutateChecked { graph in
            graph.manualConnections.removeAll { $0 === connection }
            Self.connect(&graph)
        }
    }
}
