#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kubegen_fuzz::crd_reader(data));
