/// What a conversion or decode of one frame is estimated to cost, as the converter and decoder
/// report it for negotiation: its work (CPU time, 1 ≈ a libyuv pass over a megabyte) and its
/// preference charge (a change of pixel format rounds, and rounding stacks; JPEG's quantisation is
/// lossier still), which ranks plans and takes no time.
package struct CostEstimate: Sendable, Equatable {
    /// The CPU work, on the converter's scale.
    package var work = 0.0
    /// The quality charge beyond the work: ranks plans, takes no time.
    package var preference = 0.0

    package static func + (lhs: CostEstimate, rhs: CostEstimate) -> CostEstimate {
        CostEstimate(work: lhs.work + rhs.work, preference: lhs.preference + rhs.preference)
    }
}
