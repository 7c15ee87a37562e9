// AVFoundation code uses NSObject, DispatchQueue, NotificationCenter and Data with only
// `import AVFoundation`, which re-exports Foundation. `import Viewfinder` does the same, so such
// code compiles after deleting "AV" without adding imports.
@_exported import Dispatch
@_exported import Foundation
