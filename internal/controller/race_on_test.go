//go:build race

package controller_test

// raceDetector is true in a build with the race detector, which runs the
// manager several times slower.
const raceDetector = true
