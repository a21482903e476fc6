fn main() {
    // The runtimes open the loader by soname; this file must answer to it.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libze_loader.so.1");
}
