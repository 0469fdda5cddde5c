/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Removes PATH and everything below it without following any symlink a
 * worker may have planted, and without leaving its parent's file system
 * (-EXDEV for a mount point, PATH itself included). A missing PATH is success. */
int rm_rf(const char *path);

/* Removes every entry inside DIR (not DIR itself). */
int rm_rf_children(const char *dir);

/* Removes NAME in the directory DFD (an O_PATH fd will do) and everything
 * below it, as rm_rf() does, within DFD's file system. A missing NAME is
 * success. */
int rm_rf_at_fd(int dfd, const char *name);
