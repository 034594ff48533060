/* What egretctl's sub-commands in files of their own share with egretctl.c. */
#ifndef EGRET_EGRETCTL_H
#define EGRET_EGRETCTL_H

/* egretctl oci-hook (ocihook.c): argv[0] is "oci-hook"; control is egretd's control socket */
int egretctl__oci_hook(int argc, char **argv, const char *control);
/* egretctl register / unregister: a registration by hand (argv[0] the verb) */
int egretctl__register(int argc, char **argv, const char *control);
int egretctl__unregister(int argc, char **argv, const char *control);

#endif /* EGRET_EGRETCTL_H */
