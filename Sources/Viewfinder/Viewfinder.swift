// The umbrella module: `import Viewfinder` is every product of the package — the core, the V4L2,
// PipeWire (with the Camera portal and the virtual-camera output) and ALSA backends, movie
// recording and replay, the web preview, the preview window, the virtual devices and the metadata
// output (QR codes and barcodes) — and
// linking it registers the built-in backends (``BuiltInProviders``). An app that wants less
// depends on `ViewfinderCore` and the modules it uses, and registers their providers itself.
@_exported import ViewfinderALSA
@_exported import ViewfinderCore
@_exported import ViewfinderMetadata
@_exported import ViewfinderMovie
@_exported import ViewfinderPipeWire
@_exported import ViewfinderPreviewWindow
@_exported import ViewfinderTesting
@_exported import ViewfinderV4L2
@_exported import ViewfinderWebPreview

/// Called once by the core before its device registry is first used (the umbrella's load-time
/// hook, `CViewfinderUmbrella`): hands it the built-in providers.
@_cdecl("viewfinder_umbrella_register_built_in_backends")
func registerBuiltInBackends() {
    DeviceRegistry.setBuiltInProviders { BuiltInProviders.make() }
}
