use cfg_aliases::cfg_aliases;

fn main() {
    // Setup cfg aliases
    cfg_aliases! {
        // Platforms
        apple: {
            any(
                target_os = "macos",
                target_os = "ios",
                target_os = "tvos",
                target_os = "visionos",
                target_os = "watchos"
            )
        },
        bsd: {
            any(
                target_os = "freebsd",
                target_os = "openbsd",
                target_os = "netbsd"
            )
        },
        solarish: {
            any(
                target_os = "solaris",
                target_os = "illumos"
            )
        },
        // Convenience aliases
        apple_fast: { all(apple, feature = "fast-apple-datapath") },
        apple_slow: { all(apple, not(feature = "fast-apple-datapath")) },
        wasm_browser: { all(target_family = "wasm", target_os = "unknown") },
        // Platforms that lack advanced socket APIs (cmsg, recvmmsg, etc.)
        posix_minimal: { any(target_os = "espidf", target_os = "wasi") },
    }
}
