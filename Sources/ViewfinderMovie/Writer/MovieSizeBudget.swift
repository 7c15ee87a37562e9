/// An upper bound of the size a movie file will have once closed, for
/// ``MovieWriterOptions/maxFileSize``: the bytes already written and handed to the muxer, the
/// container's boxes around every packet and fragment, and the index written at the end.
///
/// The per-packet and per-fragment figures are bounds read off the box layouts libavformat writes
/// (FFmpeg 5.1), not averages; `Tests/ViewfinderTests/MovieFileSizeLimitTests` measures how close
/// to a limit the files come. Measured with ffmpeg 5.1 on 10 s of 320x240 H.264 + AAC (770
/// packets): a fragmented MOV adds 7,052 bytes to its media data (1 s fragments), an unfragmented
/// one 10,134, Matroska 6,510 — the bounds below allow 16–36 bytes a packet, against 9–13 measured.
///
/// Thread safety: a value type; confined to its writer's queue.
import ViewfinderCore

package struct MovieSizeBudget {
    /// The container written.
    package let container: MovieContainer
    /// Whether MOV/MP4 is written in fragments (`moof` + `mdat` pairs, `mfra` at the end).
    package let fragmented: Bool
    /// Bytes in the destination once the header was written (ftyp, the initial moov or the
    /// Matroska header, the reserved `free` box).
    package var headerBytes: Int64 = 0
    /// An unfragmented MOV/MP4: the bytes of the final `moov` without its sample tables (measured
    /// as the empty moov libavformat writes for the same streams).
    package var indexBaseBytes: Int64 = 0
    /// Tracks in the file.
    package var tracks: Int64 = 1

    /// A MOV/MP4 fragment's boxes: `moof` (8) + `mfhd` (16) + `mdat` (16 at most); per track
    /// `traf` (8) + `tfhd` (40 at most) + `tfdt` (20) + `trun` (24 without its samples) and the
    /// track's `tfra` entry in the final `mfra` (19), rounded up.
    private var bytesPerFragment: Int64 { 40 + tracks * 128 }

    /// The bound for a file holding `data` payload bytes in `packets` packets (`keyframes` of
    /// them video keyframes), `fragments` MOV/MP4 fragments or Matroska clusters begun, and
    /// `seconds` of media.
    package func bound(data: Int64, packets: Int64, keyframes: Int64, fragments: Int64, seconds: Double) -> Int64 {
        let slack: Int64 = 256
        switch container {
        case .quickTime, .mpeg4:
            if fragmented {
                // A `trun` entry is 16 bytes at most (duration, size, flags, composition offset);
                // the end adds `mfra` (8) + `mfro` (16) + a `tfra` header (24) per track.
                return headerBytes + data + packets * 16 + fragments * bytesPerFragment + 24 + tracks * 24 + slack
            }
            // The final moov's sample tables, per packet at most: stts 8, stsz 4, stsc 12, co64 8,
            // stss 4; the edit lists, sample groups and a large mdat header within 1 KiB.
            return headerBytes + data + indexBaseBytes + packets * 36 + 1024 + slack
        case .matroska:
            // A SimpleBlock's header is 16 bytes at most; a cluster's 32; a cue point (one per
            // video keyframe at most) 48; the end rewrites reserved space and adds the Cues' head.
            return headerBytes + data + packets * 16 + fragments * 32 + keyframes * 48 + 1024 + slack
        case .mpegTS:
            // 4 of every 188 bytes are packet headers; each PES starts a packet (its header and
            // stuffing at most one packet more); PAT, PMT and SDT are sent again every 100 ms.
            let tables = (Int64(seconds * 10) + 2) * 3 * 188
            return headerBytes + data + data / 46 + packets * 215 + tables + slack
        case .flv:
            // An FLV tag's header (11) and back pointer (4), a video tag's 5 bytes of AVC header.
            return headerBytes + data + packets * 20 + 1024 + slack
        case .rtsp:
            // RTP: a 12-byte header per packet of at most 1,460 bytes, and the packet's own framing.
            return headerBytes + data + data / 120 + packets * 64 + slack
        }
    }
}
