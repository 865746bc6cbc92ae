//! The `kubegen` command.
fn main() {
    eprintln!("kubegen: not built yet");
    std::process::exit(2);
}
