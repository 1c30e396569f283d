package holdfast

// Version is this client's release, the same for the server and every client of holdfast
// (scripts/check-versions.mjs checks it against the server's package.json).
const Version = "0.1.0"
