/* Preloaded into the ranks of the comm tests under AddressSanitizer (and
 * ThreadSanitizer: tsan.supp's called_from_lib module must stay loaded): a
 * dlclose() that keeps every module loaded. Open MPI unloads its components
 * (mca_*.so) at MPI_Finalize; what they allocated and never freed is then
 * reported by LeakSanitizer as coming from "<unknown module>", which no
 * suppression can name. Kept loaded, those allocations are attributed to
 * their module and suppressed by lsan.supp, while leaks of sluice's own code
 * stay reported. Test-only; never linked into sluice. */
extern "C" int dlclose(void* handle);
extern "C" int dlclose(void* handle) {
  (void)handle;
  return 0;
}
