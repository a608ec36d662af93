/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The names execguardd takes on the system bus, shared with its client. */
#pragma once

#define EXECGUARD_BUS_NAME "org.execguard.Manager1"
#define EXECGUARD_BUS_PATH "/org/execguard/Manager1"
#define EXECGUARD_BUS_INTERFACE "org.execguard.Manager1"
/* Containers: execguard-oci-hook asks here (bus-containers.c). */
#define EXECGUARD_BUS_CONTAINERS_INTERFACE "org.execguard.Containers1"
#define EXECGUARD_BUS_ERROR_BAD_REQUEST "org.execguard.Containers1.BadRequest"
#define EXECGUARD_BUS_ERROR_REJECTED "org.execguard.Manager1.PolicyRejected"
#define EXECGUARD_BUS_ERROR_NO_PROCESS "org.execguard.Manager1.NoSuchProcess"
