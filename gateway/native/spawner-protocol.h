/* Generated from gateway/src/exec/spawner-protocol.ts by `npm run native:header`: do not edit. */
#ifndef PROBEGATE_SPAWNER_PROTOCOL_H
#define PROBEGATE_SPAWNER_PROTOCOL_H

#define SP_MAX_FRAME 67108864u
#define SP_KEEP_SLOTS 64
#define SP_GRACE_MS 1000
#define SP_NO_TIMEOUT 4294967295u

enum sp_op { SP_REQ_RUN = 1, SP_REQ_KILL = 2, SP_REQ_RUN_KEEP = 3, SP_REP_STARTED = 1, SP_REP_DONE = 2 };
enum sp_done_flag { SP_F_EXITED = 1, SP_F_TIMED_OUT = 2, SP_F_STDOUT_CUT = 4, SP_F_STDERR_CUT = 8, SP_F_SAME_OUT = 16 };

/* Word indexes of each frame's fixed words (u32 each, after the length prefix), and their count. */
enum { SP_RUN_TYPE = 0, SP_RUN_ID = 1, SP_RUN_TIMEOUT_MS = 2, SP_RUN_CAP = 3, SP_RUN_ARGC = 4, SP_RUN_ENVC = 5, SP_RUN_WORDS = 6 };
enum { SP_RUN_KEEP_TYPE = 0, SP_RUN_KEEP_ID = 1, SP_RUN_KEEP_TIMEOUT_MS = 2, SP_RUN_KEEP_CAP = 3, SP_RUN_KEEP_SLOT = 4, SP_RUN_KEEP_HELD = 5, SP_RUN_KEEP_ARGC = 6, SP_RUN_KEEP_ENVC = 7, SP_RUN_KEEP_WORDS = 8 };
enum { SP_KILL_TYPE = 0, SP_KILL_ID = 1, SP_KILL_WORDS = 2 };
enum { SP_STARTED_TYPE = 0, SP_STARTED_ID = 1, SP_STARTED_PID = 2, SP_STARTED_WORDS = 3 };
enum { SP_DONE_TYPE = 0, SP_DONE_ID = 1, SP_DONE_SPAWN_ERRNO = 2, SP_DONE_FLAGS = 3, SP_DONE_EXIT_CODE = 4, SP_DONE_SIGNAL = 5, SP_DONE_STDOUT_LEN = 6, SP_DONE_WORDS = 7 };

#endif
