//! The allocator's settings: what glibc's malloc keeps, and when it gives memory back.
//!
//! Every command holds most of what it reads at once (at 100,000 memories, the memory index and
//! the recall corpus), and frees large buffers as it goes (a batch of files read, a second
//! thread's corpus joined into the first): without these, the holes those leave count in the
//! process's peak memory and, for `kb mcp`, for its lifetime.

/// Makes every allocation of 128 KiB or more a mapping of its own, returned to the system when it
/// is freed. glibc otherwise raises that threshold each time such a block is freed, and the large
/// buffers a command frees (a batch of files read, a corpus being built) then leave holes in its
/// heap: 4.5 MB of a first scan of 100,000 memories, 12 MB of a warm server. Called first thing in
/// `main`, before any thread starts.
pub fn keep_large_allocations_apart() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: mallopt(M_MMAP_THRESHOLD, 131072) takes two ints and no pointer, and touches only
    // the allocator's own state: under the main arena's lock it merges that arena's free chunks
    // and sets the threshold, and the flag that stops glibc adjusting it. 128 KiB is inside the
    // range mallopt(3) allows (up to 4 * 1024 * 1024 * sizeof(long) on 64-bit). glibc's manual
    // marks mallopt MT-Unsafe (`init`, `const:mallopt`: other threads read those parameters
    // unlocked), so it must not run beside other threads: it runs first in `commands::main`,
    // while the process runs its main thread alone. It returns 1, or 0 on failure (errno not
    // set), which is ignored: the threshold then stays dynamic, which costs memory, not
    // correctness.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Hands the memory freed since the last call back to the system. A long-running server's
/// warm-up and revalidations free much more than they keep (a first reading's buffers, a listing
/// of every file), and glibc keeps what is freed in its arenas: the server's resident size would
/// carry it for hours.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim(0) takes a size and no pointer, and only hands to the system whole free
    // pages malloc holds (sbrk, madvise), never memory that is allocated. malloc_trim(3) marks it
    // MT-Safe, so the live thread may call it while the runtime's threads allocate. Its result (1
    // when memory was released, 0 when there was none to release) is not needed.
    unsafe {
        libc::malloc_trim(0);
    }
}
