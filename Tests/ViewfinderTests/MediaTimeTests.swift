import Testing

@testable import Viewfinder
