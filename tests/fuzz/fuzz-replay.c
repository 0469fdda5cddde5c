/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Runs a fuzz target over every file in the directories (or files) given,
 * so the seed corpus is exercised in builds without libFuzzer. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path) {
        FILE *f = fopen(path, "re");
        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        uint8_t *buf = malloc(1 << 20);
        if (!buf) {
                fclose(f);
                return -1;
        }
        size_t n = fread(buf, 1, 1 << 20, f);
        fclose(f);
        /* A tight copy, so ASan sees reads past the input's real end. */
        uint8_t *exact = malloc(n ? n : 1);
        if (!exact) {
                free(buf);
                return -1;
        }
        memcpy(exact, buf, n);
        free(buf);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n_files = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (replay_file(argv[i]) < 0)
                                return 1;
                        n_files++;
                        continue;
                }
                struct dirent **entries;
                int n = scandir(argv[i], &entries, NULL, alphasort);
                if (n < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                for (int j = 0; j < n; j++) {
                        char path[4096];
                        if (entries[j]->d_name[0] != '.') {
                                snprintf(path, sizeof(path), "%s/%s", argv[i], entries[j]->d_name);
                                if (replay_file(path) < 0)
                                        return 1;
                                n_files++;
                        }
                        free(entries[j]);
                }
                free(entries);
        }
        printf("replayed %u inputs\n", n_files);
        /* A corpus that silently went missing would make this test assert nothing. */
        return n_files > 0 ? 0 : 1;
}
