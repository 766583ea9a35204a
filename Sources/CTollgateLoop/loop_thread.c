#include "loop_thread.h"

#include <pthread.h>
#include <stddef.h>

static _Thread_local tollgate_loop_thread_state thread_state;

tollgate_loop_thread_state *_Nonnull tollgate_loop_thread(void) {
    return &thread_state;
}

// A pthread key is the only portable hook at thread exit; it carries no data of its own (its
// value is the thread's state, which stays readable until the thread's memory is freed).
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static tollgate_loop_release release_function;

static void release_at_exit(void *state_pointer) {
    tollgate_loop_thread_state *state = state_pointer;
    void *deadlines = state->deadlines;
    state->deadlines = NULL;
    if (deadlines != NULL && release_function != NULL) release_function(deadlines);
}

static void make_exit_key(void) {
    pthread_key_create(&exit_key, release_at_exit);
}

void tollgate_loop_thread_release_at_exit(tollgate_loop_release _Nonnull release) {
    pthread_once(&exit_key_once, make_exit_key);
    __atomic_store_n(&release_function, release, __ATOMIC_RELAXED);  // always the same function
    pthread_setspecific(exit_key, &thread_state);
}
