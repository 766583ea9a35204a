#include "tick_clock.h"

static _Thread_local tollgate_tick_state tick_state;

tollgate_tick_state *_Nonnull tollgate_tick_state_of_thread(void) {
    return &tick_state;
}
