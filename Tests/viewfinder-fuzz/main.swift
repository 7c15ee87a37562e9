// Seeded, time-boxed fuzzing of one input Viewfinder takes from outside (see FuzzTarget).
//
//   viewfinder-fuzz <listing|mjpeg|movie> --seeds DIR --seed N --seconds S --current FILE
//   viewfinder-fuzz <target> --replay DIR
//   viewfinder-fuzz seeds --out DIR
//
// Before each run the input is written to FILE, so when a run crashes the process, the caller
// (Scripts/fuzz.sh) keeps FILE as a regression input. Prints the runs made and their outcomes.
import Foundation
import ViewfinderFuzzing

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("viewfinder-fuzz: \(message)\n".utf8))
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "seeds", arguments.count == 3, arguments[1] == "--out" {
    // viewfinder-fuzz seeds --out DIR: writes each target's built-in seeds to DIR/<target>/.
    for target in FuzzTarget.allCases {
        let directory = arguments[2] + "/" + target.rawValue
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (index, seed) in target.builtInSeeds.enumerated() {
            _ = FileManager.default.createFile(atPath: "\(directory)/seed-\(index)", contents: Data(seed))
        }
    }
    exit(0)
}
guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
    fail("first argument: one of \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
}
arguments.removeFirst()
var options: [String: String] = [:]
while arguments.count >= 2, arguments[0].hasPrefix("--") {
    options[String(arguments[0].dropFirst(2))] = arguments[1]
    arguments.removeFirst(2)
}

func files(in directory: String) -> [[UInt8]] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return names.sorted().filter { !$0.hasPrefix(".") }.compactMap { name in
        FileManager.default.contents(atPath: directory + "/" + name).map { [UInt8]($0) }
    }
}

if let replay = options["replay"] {
    let inputs = files(in: replay)
    for input in inputs {
        if case .refused(let message) = target.run(input), options["verbose"] != nil { print("refused: \(message)") }
    }
    print("\(target.rawValue): replayed \(inputs.count) inputs")
    exit(0)
}

guard let seedDirectory = options["seeds"], let current = options["current"] else {
    fail("--seeds DIR and --current FILE are required")
}
let seeds = files(in: seedDirectory)
guard !seeds.isEmpty else { fail("no seed inputs in \(seedDirectory)") }
let seed = UInt64(options["seed"] ?? "1") ?? 1
let seconds = Double(options["seconds"] ?? "60") ?? 60
var mutator = FuzzMutator(seed: seed)
let deadline = Date(timeIntervalSinceNow: seconds)
var runs = 0
var refused = 0
// Inputs that were read: mutated further, as a fuzzer keeps what gets through.
var pool = seeds
while Date() < deadline {
    let base = pool[mutator.below(pool.count)]
    let input = mutator.mutate(base, others: seeds, text: target == .listing)
    _ = FileManager.default.createFile(atPath: current, contents: Data(input))
    switch target.run(input) {
    case .accepted:
        if pool.count < 256 { pool.append(input) } else { pool[mutator.below(pool.count)] = input }
    case .refused:
        refused += 1
    }
    runs += 1
}
print("\(target.rawValue): seed \(seed), \(runs) runs in \(Int(seconds)) s, \(refused) refused, no crash")
