import Foundation

/// An input through which an application supplies timed metadata — a location, a label — to be
/// recorded beside the video (the counterpart of `AVCaptureMetadataInput`).
///
/// In AVFoundation its one port (``MediaType/metadata``) connects only to a movie file output,
/// which writes the groups appended into a timed metadata track. Viewfinder's movie writer
/// writes no metadata track, so here the port connects to no output: a session takes the input
/// (``CaptureSession/canAddInput(_:)`` is `true`, as AVFoundation's) but connects nothing to it,
/// and ``append(_:)`` throws, saying so. To label a recording, set the movie file output's
/// container `metadata` (title, comment, location, …) instead.
///
/// Thread safety: immutable; may be used from any thread.
public final class CaptureMetadataInput: CaptureInput, @unchecked Sendable {  // unchecked: immutable.
    /// What the metadata appended is, as given.
    public let formatDescription: FormatDescription
    /// The clock the groups' times are on, as given.
    public let clock: any CaptureClock

    /// An input for metadata described by `formatDescription`, timed on `clock` (AVFoundation's
    /// `init(formatDescription:clock:)`).
    public init(formatDescription: FormatDescription, clock: any CaptureClock) {
        self.formatDescription = formatDescription
        self.clock = clock
        super.init(mediaTypes: [.metadata])
    }

    /// Supplies `metadata` for the time range it covers (AVFoundation's
    /// `append(_:)`). Always throws ``CaptureError/Code/unsupportedFormat`` on Linux: no output
    /// records timed metadata (see the type's summary).
    public func append(_ metadata: TimedMetadataGroup) throws(CaptureError) {
        throw CaptureError(
            .unsupportedFormat,
            "timed metadata cannot be recorded: Viewfinder's movie writer writes no metadata track, so a CaptureMetadataInput connects to no output (\(metadata.items.count) items dropped); label a recording with CaptureMovieFileOutput's `metadata` instead"
        )
    }
}

/// Metadata items that apply to one time range of a recording (the counterpart of
/// `AVTimedMetadataGroup`), what ``CaptureMetadataInput/append(_:)`` takes.
///
/// Thread safety: not `Sendable` (its items are not); its own properties are immutable.
public final class TimedMetadataGroup {
    /// The items.
    public let items: [MetadataItem]
    /// The time range they apply to.
    public let timeRange: MediaTimeRange

    /// A group of `items` for `timeRange`.
    public init(items: [MetadataItem], timeRange: MediaTimeRange) {
        self.items = items
        self.timeRange = timeRange
    }
}

/// One metadata value and what it is (the counterpart of `AVMetadataItem` and
/// `AVMutableMetadataItem`, which are one class here: set its properties after `init()`).
///
/// Thread safety: not `Sendable`: a mutable class, to be used from one thread at a time.
public final class MetadataItem {
    /// What the value is (`"mdta/com.apple.quicktime.location.ISO6709"`, say).
    public var identifier: String?
    /// The value's type, as a Uniform Type identifier string.
    public var dataType: String?
    /// The value (a string, a number, data).
    public var value: Any?
    /// When it applies from.
    public var time: MediaTime = .invalid
    /// How long it applies.
    public var duration: MediaTime = .invalid

    /// An item with nothing set.
    public init() {}
}

/// `AVMutableMetadataItem`: the same class as ``MetadataItem``, whose properties are settable.
public typealias MutableMetadataItem = MetadataItem
